"""One task of a batch run: read a part, score it with `score_frame`, write its own results file.

The task is the same whatever engine runs it. Its results file is named by the part's index
and appears whole or not at all (written beside, then renamed over; object stores publish an
object whole on close), so a task that runs twice, because its worker died or the engine
retried it, leaves one file with the same rows: no row is in the output twice. Only a small
`PartSummary` goes back to the driver.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import IO, TYPE_CHECKING, Any, Literal

from tracesim import _outputs
from tracesim.batch._files import is_url
from tracesim.batch._frame import RUN_FIELDS, pandas, result_schema, scored_frame
from tracesim.batch._records import reason_of
from tracesim.batch._score_rows import EvaluatorSpec, RunValues, build_evaluators, scores_runs
from tracesim.batch._summary import MAX_EXAMPLES, PartSummary, Tally, call_differences, tokens_of
from tracesim.runs import Expected, Run, ToolCall

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped,unused-ignore]

    from tracesim.batch._parts import Chunk, Part
    from tracesim.batch._sources import Records, Spans

__all__ = ["RUN_COLUMNS", "Job", "Sink", "run_calls", "run_part"]

OutputFormat = Literal["parquet", "jsonl"]
_INT_COLUMNS = ("row", "span_end_ns")
VALUE_COLUMNS = ("input", "output", "expected")
RUN_COLUMNS = ("tool_calls", "expected_tool_calls")
"""Written too when run evaluators score: the calls a run made and those expected (JSON)."""


@dataclass(frozen=True)
class Sink:
    """Where results go: a directory (or URL prefix) of ``part-NNNNN.parquet`` / ``.jsonl`` files."""

    root: str
    format: OutputFormat = "parquet"

    def path(self, index: int) -> str:
        return f"{self.root.rstrip('/')}/part-{index:05d}.{self.format}"

    def write(self, index: int, frame: pd.DataFrame, schema: Any) -> None:
        """Write one part's results whole, redacted, replacing a file a previous try of it left.

        Every text cell and column name is redacted before the frame is encoded (`_redacted`):
        Parquet is binary, so the bytes could not be searched for secrets after.
        """
        data = _encode(*_redacted(frame, schema), self.format)
        target = self.path(index)
        if is_url(target):
            _upload(target, data)
            return
        _outputs.write_bytes_of(target, partial(_put, data))


def _put(data: bytes, handle: IO[bytes]) -> None:
    handle.write(data)


def _upload(url: str, data: bytes) -> None:
    """Put a redacted part on an object store (published whole on close); `tracesim._outputs`
    writes local files only."""
    import fsspec  # type: ignore[import-untyped,unused-ignore]

    with fsspec.open(url, "wb") as handle:
        handle.write(data)


@dataclass(frozen=True)
class Job:
    """Everything a task needs, sent to each worker once: what to read, score with, write to."""

    source: Records | Spans
    evaluators: tuple[EvaluatorSpec, ...]
    sink: Sink


def run_part(job: Job, index: int, part: Part) -> PartSummary:
    """Read, score and write part ``index``; return what it added up to."""
    evaluators = build_evaluators(job.evaluators)  # this process's, built on its first part
    runs = any(scores_runs(ev) for ev in evaluators)
    chunk = job.source.read(part, runs=runs)
    summary = PartSummary(index, records=len(chunk.bad))
    tallies = summary.tallies = {ev.name: Tally(ev.threshold) for ev in evaluators}
    good = [i for i, bad in enumerate(chunk.bad) if bad is None]
    rows = pandas().DataFrame(
        [chunk.triples[i] for i in good], index=good, columns=["output", "expected", "input"], dtype=object
    )
    good_runs = [chunk.runs[i] for i in good] if runs else None
    scores, results = scored_frame(rows, evaluators, "output", "expected", "input", good_runs)
    run_scorers = {ev.name for ev in evaluators if scores_runs(ev)}
    for row_index, row in zip(good, results, strict=True):
        for result in row:
            tallies[result.name].add(result.status, finite(result.score), result.passed, tokens_of(result))
            if (
                result.passed is False
                and result.name in run_scorers
                and len(summary.failed_runs) < MAX_EXAMPLES
            ):
                differences = call_differences(result)
                if differences is not None:
                    summary.failed_runs.append(
                        (part.path, chunk.keys["row"][row_index], result.name, differences)
                    )
    for i, bad in enumerate(chunk.bad):
        if bad is not None:
            summary.bad[reason_of(bad)] += 1
            if len(summary.examples) < MAX_EXAMPLES:
                summary.examples.append((part.path, chunk.keys["row"][i], bad))
    keys = job.source.key_columns
    values = (*VALUE_COLUMNS, *RUN_COLUMNS) if runs else VALUE_COLUMNS
    job.sink.write(index, _keys(chunk, keys, runs).join(scores), _schema(keys, evaluators, values))
    return summary


def _keys(chunk: Chunk, key_columns: Sequence[str], runs: bool = False) -> pd.DataFrame:
    """Every record's keys, what was scored (as text), and why a bad row is bad (null for the others).

    The input, output and expected values sit beside the scores, so the failing rows of a run
    are read in its results, without a join back to the data. With run evaluators, so do the
    tool calls the run made and those expected (`RUN_COLUMNS`, JSON).
    """
    pd = pandas()
    keys = pd.DataFrame({name: pd.array(chunk.keys[name], dtype=object) for name in key_columns})
    for position, name in ((2, "input"), (0, "output"), (1, "expected")):
        keys[name] = pd.array([value_text(triple[position]) for triple in chunk.triples], dtype=object)
    if runs:
        calls = [run_calls(run) for run in chunk.runs]
        keys["tool_calls"] = pd.array([value_text(made) for made, _ in calls], dtype=object)
        keys["expected_tool_calls"] = pd.array([value_text(wanted) for _, wanted in calls], dtype=object)
    keys["bad_row"] = pd.array(chunk.bad, dtype=object)
    return keys


def run_calls(run: RunValues | None) -> tuple[Any, Any]:
    """The tool calls a row's run made and those it was expected to make, as JSON-like data
    (None where unknown), for the results.

    Example:
        >>> from tracesim.runs import Expected
        >>> run_calls(RunValues([{"name": "lookup"}], Expected(tool_calls=[{"name": "lookup"}])))
        ([{'name': 'lookup'}], [{'name': 'lookup', 'arguments': {}}])
    """
    if run is None:
        return None, None
    made: Any = run.output
    if isinstance(made, Run):
        made = made.tool_calls
    if isinstance(made, (list, tuple)):
        made = [item.as_dict() if isinstance(item, ToolCall) else item for item in made]
    expected = run.expected
    wanted = None
    if isinstance(expected, Expected) and expected.tool_calls is not None:
        wanted = [call.as_dict() for call in expected.tool_calls]
    return made, wanted


def finite(score: float | None) -> float | None:
    """``score``, or None for NaN and the infinities (which no mean should take in)."""
    return score if score is None or math.isfinite(score) else None


def _encode(frame: pd.DataFrame, schema: Any, fmt: OutputFormat) -> bytes:
    import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]

    table = pa.Table.from_pandas(frame, schema=schema, preserve_index=False)
    if fmt == "jsonl":
        return "".join(_json_line(row) for row in table.to_pylist()).encode("utf-8")
    import pyarrow.parquet as pq  # type: ignore[import-untyped,unused-ignore]

    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return bytes(sink.getvalue().to_pybytes())


def _schema(
    key_columns: Sequence[str], evaluators: Sequence[EvaluatorSpec], values: Sequence[str] = VALUE_COLUMNS
) -> Any:
    """One schema for every part, whatever its values (a part of bad rows only, all-null labels)."""
    import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]

    fields = [pa.field(name, pa.int64() if name in _INT_COLUMNS else pa.string()) for name in key_columns]
    fields.extend(pa.field(name, pa.string()) for name in (*values, "bad_row"))
    return pa.schema([*fields, *result_schema(evaluators)])


def value_text(value: Any) -> str | None:
    """A scored value as text for the results: a string as it is, anything else as JSON.

    Example:
        >>> value_text("Paris"), value_text({"city": "Paris"}), value_text(None)
        ('Paris', '{"city": "Paris"}', None)
    """
    if value is None or isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, TypeError, RecursionError):
        return repr(value)[:10_000]


def _redacted(frame: pd.DataFrame, schema: Any) -> tuple[pd.DataFrame, Any]:
    """The frame and schema as written: every text column (by ``schema``) redacted, as str or
    None in text UTF-8 can hold (a lone ``"\\ud800"`` kept as visible text); column names redacted.

    Joining the scores of the good rows to every row's keys leaves NaN in a bad row's text
    columns: it becomes None here.
    """
    import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]

    for field in schema:
        if pa.types.is_string(field.type) and field.name in frame.columns:
            values = _outputs.clean(frame[field.name].tolist())
            frame[field.name] = pandas().array([_encodable(value) for value in values], dtype=object)
    names = _column_names(schema.names)
    if any(name != written for name, written in names.items()):  # an evaluator named with a secret
        frame = frame.rename(columns=names)
        schema = pa.schema([field.with_name(names[field.name]) for field in schema])
    return frame, schema


def _column_names(names: Sequence[str]) -> dict[str, str]:
    """Each column's name as written: redacted, the evaluators' kept apart.

    Two evaluators whose names redact alike (two keys) would give two columns of one name:
    their names are numbered apart as `tracesim._outputs.distinct` does (``[REDACTED:api_key]``,
    ``[REDACTED:api_key]-2``), as ``tracesim eval``'s results and summary name them.
    """
    evaluator = {
        name: prefix
        for name in names
        for prefix, dot, field in [name.rpartition(".")]
        if dot and field in RUN_FIELDS
    }
    written = _outputs.distinct(evaluator.values())
    return {
        name: f"{written[evaluator[name]]}.{name.rpartition('.')[2]}"
        if name in evaluator
        else _outputs.text(name)
        for name in names
    }


def _encodable(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    if value.isascii():
        return value
    return value.encode("utf-8", "backslashreplace").decode("utf-8")


def _json_line(row: dict[str, Any]) -> str:
    # scores are finite or null (score_frame made NaN null), so strict JSON always holds them
    return json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n"
