"""The engine-agnostic core: score many rows with a set of evaluators, in this process.

Everything that scores in bulk goes through `score_rows`: ``tracesim eval`` on local cores,
`tracesim.batch.score_frame` inside Dask, Ray, Spark or Daft tasks. So a row gets the same
numbers whichever engine runs it.

Evaluators given as configs (``"rouge:rouge_type=rouge1"`` or ``{"type": "rouge"}``) are built
once per process and kept, keyed by their canonical JSON: an engine that calls the core once
per batch builds a model-backed evaluator (its HTTP client, its cache, its offline model) once
per worker, never per batch or per row.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    from tracesim.evaluators import EvalResult, Evaluator

__all__ = ["EvaluatorSpec", "RunValues", "build_evaluators", "config_key", "score_rows", "scores_runs"]

EvaluatorSpec = Union[str, Mapping[str, Any], "Evaluator"]
"""An evaluator, its config mapping, or its ``"TYPE:key=value,..."`` spec (the CLI's ``-e``)."""

DEFAULT_CONCURRENCY = 8
"""Model requests in flight per evaluator when it sets no ``max_concurrency``."""

_lock = threading.Lock()
_built: dict[str, Evaluator] = {}


def config_key(config: Mapping[str, Any]) -> str:
    """The cache key of an evaluator config: the same for equal configs, whatever their key order.

    Example:
        >>> config_key({"threshold": 0.8, "type": "levenshtein"})
        '{"threshold":0.8,"type":"levenshtein"}'
    """
    return json.dumps(config, sort_keys=True, separators=(",", ":"), default=repr)


def build_evaluators(specs: Sequence[EvaluatorSpec]) -> tuple[Evaluator, ...]:
    """The evaluators for ``specs``; those given as configs come from this process's cache.

    Raises:
        tracesim.ConfigError: an unknown type, a bad option, or two evaluators with one name.

    Example:
        >>> first = build_evaluators(["levenshtein:threshold=0.8"])
        >>> first[0] is build_evaluators([{"type": "levenshtein", "threshold": 0.8}])[0]
        True
    """
    from tracesim._errors import ConfigError
    from tracesim.evaluators import Evaluator, from_config, parse_spec

    if isinstance(specs, (str, Mapping, Evaluator)):
        specs = [specs]
    evaluators: list[Evaluator] = []
    for spec in specs:
        if isinstance(spec, Evaluator):
            evaluators.append(spec)
            continue
        config = parse_spec(spec) if isinstance(spec, str) else spec
        if not isinstance(config, Mapping):
            raise ConfigError("evaluators", spec, "Evaluator objects, config mappings or 'type:opt=value'")
        key = config_key(config)
        with _lock:
            found = _built.get(key)
        if found is None:
            found = from_config(config, source=spec if isinstance(spec, str) else None)
            with _lock:
                found = _built.setdefault(key, found)  # another thread may have built it first
        evaluators.append(found)
    names = [ev.name for ev in evaluators]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ConfigError("evaluators", twice, "evaluators with distinct names (set name=... on one)")
    return tuple(evaluators)


Triple = tuple[Any, Any, Any]
"""A row to score: (output, expected, input)."""


@dataclass(frozen=True)
class RunValues:
    """What run evaluators (``scores_runs``) score for one row instead of its output and expected
    value: ``output``, a `tracesim.runs.Run` (a span's, rebuilt from its trace) or a list of tool
    calls (a data file's ``tool_calls`` column), and ``expected``, a `tracesim.runs.Expected`.
    ``missing`` says why the row has no run: run evaluators then skip it with that reason;
    ``error`` why its run cannot be read (a bad cell, where no bad row can be reported): run
    evaluators then give an error result saying so.

    Example:
        >>> RunValues(missing="the 'tool_calls' cell is empty").output is None
        True
    """

    output: Any = None
    expected: Any = None
    missing: str | None = None
    error: str | None = None


def scores_runs(evaluator: Any) -> bool:
    """Whether ``evaluator`` scores runs (a `tracesim.runs.Run` or tool calls), not output strings."""
    return bool(getattr(evaluator, "scores_runs", False))


def score_rows(
    evaluators: Sequence[Evaluator],
    rows: Sequence[Triple],
    runs: Sequence[RunValues | None] | None = None,
) -> list[list[EvalResult]]:
    """Score every ``(output, expected, input)`` row with every evaluator, in order.

    ``runs`` gives, per row, what run evaluators score instead (`RunValues`), or None for a row
    without one: run evaluators get its output and expected value then, as string evaluators do.
    A run cut short is scored as it is, and its run evaluators' results say why in
    ``details["run_truncated"]``.

    Synchronous evaluators run row after row on the calling thread. Async (model-backed)
    evaluators send the requests of all rows together, at most ``max_concurrency`` at a time
    per evaluator (8 when not set), on this process's model event loop, each within its
    ``timeout_s``. An evaluator that raises (one that overrides ``evaluate``) gives an
    ``error`` result for that row; nothing here stops for one row.

    Example:
        >>> from tracesim.evaluators import ExactMatch, Levenshtein
        >>> results = score_rows([ExactMatch(), Levenshtein()], [("Paris", "Paris", None)])
        >>> [(r.name, r.score) for r in results[0]]
        [('exact', 1.0), ('levenshtein', 1.0)]
    """
    if runs is not None and len(runs) != len(rows):
        raise ValueError(f"{len(runs)} runs for {len(rows)} rows: give one (or None) per row")
    awaited = _score_async(evaluators, rows, runs)
    run_scorers = [scores_runs(ev) for ev in evaluators]
    scored: list[list[EvalResult]] = []
    for number, row in enumerate(rows):
        known = awaited.get(number, {})
        run = runs[number] if runs is not None else None
        found = [
            known[i] if i in known else _evaluate(ev, _row_for(row, run if run_scorers[i] else None))
            for i, ev in enumerate(evaluators)
        ]
        cut = _truncation(run)
        if cut is not None:
            for i, result in enumerate(found):
                if run_scorers[i] and result.status != "skipped":  # a copy: a result may be a cached one
                    found[i] = result.model_copy(update={"details": {**result.details, "run_truncated": cut}})
        scored.append(found)
    return scored


def _truncation(run: RunValues | None) -> str | None:
    """Why a row's run was cut short (a step limit, a trace split between parts), or None: run
    evaluators' results say so in ``details["run_truncated"]``, as they score what is there."""
    from tracesim.runs import Run

    output = run.output if run is not None else None
    if isinstance(output, Run) and output.truncated:
        return output.truncated_reason or "the run was cut short"
    return None


def _row_for(row: Triple, run: RunValues | None) -> Triple | RunValues:
    """What one evaluator scores of a row: the row, its run's values, or the run it cannot score."""
    if run is None:
        return row
    if run.missing is not None or run.error is not None:
        return run
    return run.output, run.expected, row[2]


def _evaluate(ev: Evaluator, row: Triple | RunValues) -> EvalResult:
    if isinstance(row, RunValues):
        return _no_run(ev, row)
    output, expected, input_value = row
    try:
        return ev.evaluate(output, expected, input=input_value)
    except Exception as exc:  # a user evaluator that overrides evaluate(): this row's error only
        return ev._error(exc, 0.0)


def _no_run(ev: Evaluator, run: RunValues) -> EvalResult:
    from tracesim.evaluators import EvalResult

    if run.error is not None:
        error = f"bad_run: {run.error}"
        return EvalResult(
            name=ev.name, threshold=ev.threshold, status="error", error=error, error_type="bad_run"
        )
    return EvalResult(name=ev.name, threshold=ev.threshold, status="skipped", explanation=run.missing)


def _score_async(
    evaluators: Sequence[Evaluator], rows: Sequence[Triple], runs: Sequence[RunValues | None] | None
) -> dict[int, dict[int, EvalResult]]:
    """Results of the async evaluators for every row, by row index and evaluator index."""
    wanted = [(i, ev) for i, ev in enumerate(evaluators) if ev.is_async]
    if not wanted or not rows:
        return {}
    from tracesim.evaluators._model import submit

    # The model loop is the one loop of this process: its HTTP connections and rate limits
    # outlive a batch, and no loop is started per batch.
    return submit(_gather(wanted, rows, runs)).result()


async def _gather(
    wanted: list[tuple[int, Evaluator]], rows: Sequence[Triple], runs: Sequence[RunValues | None] | None
) -> dict[int, dict[int, Any]]:
    limits = {i: asyncio.Semaphore(ev.max_concurrency or DEFAULT_CONCURRENCY) for i, ev in wanted}

    async def one(number: int, i: int, ev: Evaluator, row: Triple) -> tuple[int, int, EvalResult]:
        run = runs[number] if runs is not None and scores_runs(ev) else None
        values = _row_for(row, run)
        if isinstance(values, RunValues):
            return number, i, _no_run(ev, values)
        output, expected, input_value = values
        async with limits[i]:
            try:
                pending = ev.aevaluate(output, expected, input=input_value)
                result = await asyncio.wait_for(pending, ev.timeout_s)
            except asyncio.TimeoutError:
                result = _timed_out(ev)
            except Exception as exc:  # a user evaluator's aevaluate that raises: this row's error only
                result = ev._error(exc, 0.0)
        return number, i, result

    done = await asyncio.gather(*(one(n, i, ev, row) for n, row in enumerate(rows) for i, ev in wanted))
    found: dict[int, dict[int, Any]] = {}
    for number, i, result in done:
        found.setdefault(number, {})[i] = result
    return found


def _timed_out(ev: Evaluator) -> EvalResult:
    from tracesim.evaluators import EvalResult
    from tracesim.evaluators._model_evaluator import describe_timeout

    message = describe_timeout(ev)
    error_result = getattr(ev, "_error_result", None)
    if error_result is not None:  # model-backed evaluators word their own errors
        result: EvalResult = error_result("timeout", message, 0.0, {})
        return result
    error = f"timeout: {message}"
    return EvalResult(name=ev.name, threshold=ev.threshold, status="error", error=error, error_type="timeout")
