"""`score_frame`: the batch core for any engine that hands out pandas DataFrames.

Dask's ``map_partitions``, Ray Data's ``map_batches(batch_format="pandas")``, Spark's
``mapInPandas`` and Daft's batch UDFs all call a function with a DataFrame and want one back;
`score_frame` is that function. It reads three columns, scores every row with `score_rows`
(evaluators given as configs are built once per worker process) and returns the results as
columns, on the same index, so they join back to the input.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tracesim import _outputs
from tracesim.batch._records import Columns
from tracesim.batch._score_rows import EvaluatorSpec, RunValues, build_evaluators, score_rows, scores_runs

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped,unused-ignore]

    from tracesim.evaluators import EvalResult, Evaluator

__all__ = [
    "FIELDS",
    "RUN_FIELDS",
    "fields_of",
    "frame_runs",
    "missing",
    "result_columns",
    "result_schema",
    "score_frame",
    "scored_frame",
]

FIELDS = ("score", "passed", "label", "explanation", "status", "error")
"""The result columns of each evaluator, ``<name>.<field>``."""

RUN_FIELDS = (*FIELDS, "details")
"""The result columns of a run evaluator (``scores_runs``): ``<name>.details`` too, its details as
JSON (the missing, extra and mismatched tool calls)."""

INSTALL = "pip install 'tracesim[dask]'"


def pandas() -> Any:
    """The pandas module, or an ImportError that says which extra brings it."""
    try:
        import pandas as pd  # type: ignore[import-untyped,unused-ignore]
    except ImportError as exc:
        raise ImportError(f"tracesim.batch needs pandas and pyarrow: {INSTALL}") from exc
    return pd


def score_frame(
    frame: pd.DataFrame,
    evaluators: Sequence[EvaluatorSpec],
    *,
    output: str = "output",
    expected: str = "expected",
    input: str = "input",
    keep: Sequence[str] = ("id",),
    tool_calls: str = "tool_calls",
    expected_tool_calls: str = "expected_tool_calls",
) -> pd.DataFrame:
    """Score each row of ``frame``; return one column per evaluator and result field, redacted.

    The columns are ``<name>.score`` (float, NaN when there is no score), ``<name>.passed``
    (nullable ``boolean``), ``<name>.label``, ``<name>.explanation``, ``<name>.status``
    (``ok``, ``skipped``, ``error``) and ``<name>.error`` (nullable ``string``), after the
    ``keep`` columns that ``frame`` has (row ids), on ``frame``'s index. A missing value
    (None, NaN, ``pd.NA``) in the expected column means there is none: evaluators that need
    one report ``skipped``. The ``input`` and ``expected`` columns may be absent. An empty
    frame gives the empty result with its dtypes (the ``meta`` Dask asks for). The text
    columns (label, explanation, status, error) pass through tracesim's redaction, so a frame
    an engine writes holds no secret an evaluator echoed; the ``keep`` columns are as given.

    Run evaluators (``scores_runs``) score the ``tool_calls`` column, when ``frame`` has it,
    against ``expected_tool_calls`` (lists of ``{"name", "arguments"}`` or JSON text of one,
    read as ``tracesim eval`` reads them); their results add ``<name>.details`` (JSON). A cell
    that is not a list of tool calls gives their results ``status="error"`` naming the column
    and the item (a frame has no bad rows); string evaluators score the row as usual.

    Example:
        >>> import pandas as pd
        >>> rows = pd.DataFrame({"id": ["q1", "q2"], "output": ["Paris", "Lyon"],
        ...                      "expected": ["Paris", None]})
        >>> scores = score_frame(rows, ["levenshtein:threshold=0.8"])
        >>> scores[["id", "levenshtein.score", "levenshtein.status"]].to_dict("list")
        {'id': ['q1', 'q2'], 'levenshtein.score': [1.0, nan], 'levenshtein.status': ['ok', 'skipped']}
    """
    built = build_evaluators(evaluators)
    cols = Columns(output, expected, input, "id", tool_calls, expected_tool_calls)
    runs = frame_runs(frame, cols) if any(scores_runs(ev) for ev in built) else None
    scores, _ = scored_frame(frame, built, output, expected, input, runs)
    kept = [name for name in keep if name in frame.columns]
    return pandas().concat([frame[kept], scores], axis=1) if kept else scores


def scored_frame(
    frame: pd.DataFrame,
    evaluators: Sequence[Evaluator],
    output: str,
    expected: str,
    input: str,
    runs: Sequence[RunValues | None] | None = None,
) -> tuple[pd.DataFrame, list[list[EvalResult]]]:
    """The result columns of `score_frame`, and the results they were made from (``runs``: what
    run evaluators score per row, see `score_rows`)."""
    if output not in frame.columns:
        columns = ", ".join(map(str, frame.columns)) or "none"
        raise KeyError(f"no {output!r} column to score (columns: {columns})")
    size = len(frame)
    outputs = _values(frame[output])
    expecteds = _values(frame[expected]) if expected in frame.columns else [None] * size
    inputs = _values(frame[input]) if input in frame.columns else [None] * size
    results = score_rows(evaluators, list(zip(outputs, expecteds, inputs, strict=True)), runs)
    return pandas().DataFrame(result_columns(evaluators, results), index=frame.index), results


def result_columns(
    evaluators: Sequence[Evaluator], results: Sequence[Sequence[EvalResult]]
) -> dict[str, Any]:
    """The result columns of ``results`` (a row of results per record), with their dtypes."""
    pd = pandas()
    columns: dict[str, Any] = {}
    for i, ev in enumerate(evaluators):
        mine = [row[i] for row in results]
        columns[f"{ev.name}.score"] = pd.array([_finite(r.score) for r in mine], dtype="float64")
        columns[f"{ev.name}.passed"] = pd.array([r.passed for r in mine], dtype="boolean")
        for name in ("label", "explanation", "status", "error"):
            # Redacted here, so that a frame an engine writes holds no secret an evaluator echoed
            # (a judge's 401 quoting the key). pandas' nullable string: the same dtype empty or
            # not, and on pandas 2 and 3 alike.
            values = _outputs.clean([getattr(r, name) for r in mine])
            columns[f"{ev.name}.{name}"] = pd.array(values, dtype=pd.StringDtype())
        if scores_runs(ev):
            details = _outputs.clean([details_text(r.details) for r in mine])
            columns[f"{ev.name}.details"] = pd.array(details, dtype=pd.StringDtype())
    return columns


def frame_runs(frame: pd.DataFrame, cols: Columns) -> list[RunValues | None] | None:
    """What run evaluators score per row of ``frame`` (None when it has no tool call columns).

    Example:
        >>> import pandas as pd
        >>> frame = pd.DataFrame({"output": ["ok"], "tool_calls": ['[{"name": "a"}]']})
        >>> frame_runs(frame, Columns())[0].output
        [ToolCall(name='a', arguments={})]
    """
    from tracesim.batch._records import run_cells

    names = (cols.output, cols.expected, cols.tool_calls, cols.expected_tool_calls)
    present = [name for name in dict.fromkeys(names) if name in frame.columns]
    if not cols.has_runs(present):
        return None
    columns = {name: _values(frame[name]) for name in present}
    runs: list[RunValues | None] = []
    for i in range(len(frame)):
        run = run_cells({name: values[i] for name, values in columns.items()}, cols)
        runs.append(RunValues(error=run) if isinstance(run, str) else run)
    return runs


def fields_of(evaluator: Any) -> tuple[str, ...]:
    """The result fields of an evaluator: `RUN_FIELDS` for a run evaluator, else `FIELDS`."""
    return RUN_FIELDS if scores_runs(evaluator) else FIELDS


def details_text(details: Any) -> str | None:
    """A result's details as JSON text (None when empty), for a results column.

    Example:
        >>> details_text({"missing": [{"name": "lookup", "arguments": {}}]})
        '{"missing": [{"name": "lookup", "arguments": {}}]}'
    """
    if not details:
        return None
    try:
        return json.dumps(details, ensure_ascii=False, allow_nan=False, default=str)
    except (ValueError, TypeError, RecursionError):
        return json.dumps(repr(details)[:10_000])


def result_schema(evaluators: Sequence[EvaluatorSpec]) -> Any:
    """The Arrow schema of `score_frame`'s result columns (``keep`` columns not included).

    For engines that want the output type before they run: Daft's ``return_dtype``, Spark's
    ``mapInPandas`` schema, a Parquet writer's schema.

    Example:
        >>> result_schema(["exact"]).names
        ['exact.score', 'exact.passed', 'exact.label', 'exact.explanation', 'exact.status', 'exact.error']
    """
    import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]

    types = {"score": pa.float64(), "passed": pa.bool_()}
    return pa.schema(
        [
            pa.field(f"{ev.name}.{name}", types.get(name, pa.string()))
            for ev in build_evaluators(evaluators)
            for name in fields_of(ev)
        ]
    )


def missing(value: Any) -> bool:
    """Whether a cell holds no value: None, NaN, ``pd.NA`` or ``NaT``.

    Example:
        >>> missing(None), missing(float("nan")), missing(""), missing(0.0)
        (True, True, False, False)
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return True
    # pd.NA and NaT: only pandas' own scalars, found by type name so no import is needed here
    return type(value).__name__ in ("NAType", "NaTType")


def _values(column: pd.Series) -> list[Any]:
    return [None if missing(value) else value for value in column.tolist()]


def _finite(score: float | None) -> float:
    return score if score is not None and math.isfinite(score) else math.nan
