"""The cap every run evaluator puts on the number of tool calls it compares.

Text evaluators cut their texts at ``max_chars``; run evaluators cut the tool calls at
``max_calls`` (1,000 by default), so that their quadratic parts (longest common
subsequences, greedy pairing) stay bounded on a runaway agent's 100,000 calls. Above the cap
each side keeps its first ``max_calls`` calls (a `Run` keeps the steps up to the one that
brings it over), and the result records the cap as ``details["truncated_to"]``, as the text
evaluators do.
"""

from __future__ import annotations

import dataclasses
import json
import re
from math import isfinite
from time import perf_counter
from typing import Any, ClassVar

from tracesim.evaluators._base import Evaluator, Measurement
from tracesim.evaluators._options import check_int
from tracesim.evaluators._result import EvalResult, measured_result
from tracesim.runs import Expected, Run

__all__ = ["DEFAULT_MAX_CALLS", "NO_EXPECTED_CALLS", "CappedCalls", "cut_calls"]

NO_EXPECTED_CALLS = "no expected tool calls to compare against"

DEFAULT_MAX_CALLS = 1_000


def _cut_list(value: Any, limit: int, runs: bool) -> tuple[Any, bool]:
    """``value`` with at most ``limit`` calls, and whether calls were cut (a `Run` only when
    ``runs``)."""
    if isinstance(value, (list, tuple)):
        return (value[:limit], True) if len(value) > limit else (value, False)
    if isinstance(value, str):
        first = _first_items(value, limit)
        return (value, False) if first is None else (first, True)
    if isinstance(value, Run) and runs:
        return _cut_run(value, limit)
    if isinstance(value, Expected) and value.tool_calls is not None and len(value.tool_calls) > limit:
        return Expected(output=value.output, tool_calls=value.tool_calls[:limit]), True
    return value, False


_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")


def _first_items(text: str, limit: int) -> list[Any] | None:
    """The first ``limit`` items of the JSON array ``text`` when it holds more, else None.

    Items are decoded one at a time, so a long array is never parsed whole in one call that
    holds the GIL (``json.loads`` of a 100,000-call text holds it for a quarter of a second).
    Text that is not such an array is None too: the evaluator's own reading reports it.
    """
    at = _SPACE.match(text).end()  # type: ignore[union-attr]
    if not text.startswith("[", at):
        return None
    at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
    items: list[Any] = []
    while not text.startswith("]", at):
        try:
            item, at = _DECODER.raw_decode(text, at)
        except ValueError:
            return None
        if len(items) == limit:
            return items
        items.append(item)
        at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
        if not text.startswith(",", at):
            return None
        at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
    return None


def _cut_run(run: Run, limit: int) -> tuple[Run, bool]:
    """``run`` with its steps up to the one that would bring its executed or its requested
    calls over ``limit`` (its own output, duration and truncation kept)."""
    steps = run.steps
    if len(steps) <= limit:  # the common case: no more executed calls than steps
        requested = 0
        for step in steps:
            if step.requested:
                requested += len(step.requested)
        if requested <= limit:
            return run, False
    executed = requested = 0
    for index, step in enumerate(steps):
        executed += step.kind == "tool" and step.tool_call is not None
        requested += len(step.requested)
        if executed > limit or requested > limit:
            return dataclasses.replace(run, steps=steps[:index]), True
    return run, False


def cut_calls(
    output: Any, expected: Any, limit: int | None, *, runs: bool = True, sides_both: bool = True
) -> tuple[Any, Any, int | None]:
    """Both sides cut to their first ``limit`` tool calls; the third item is ``limit`` when
    either side was cut, else None. ``limit=None`` cuts nothing; ``runs=False`` leaves a `Run`
    whole; ``sides_both=False`` cuts the output only (the expected value is not calls).

    Example:
        >>> cut_calls([{"name": "a"}, {"name": "b"}], [{"name": "a"}], 1)
        ([{'name': 'a'}], [{'name': 'a'}], 1)
    """
    if limit is None:
        return output, expected, None
    output, cut_output = _cut_list(output, limit, runs)
    if not sides_both:
        return output, expected, limit if cut_output else None
    expected, cut_expected = _cut_list(expected, limit, runs)
    return output, expected, limit if cut_output or cut_expected else None


class CappedCalls(Evaluator):
    """A run evaluator's ``max_calls`` option: both sides cut before scoring, the cut recorded."""

    max_calls: int | None
    cuts_runs: ClassVar[bool] = True  # False: a Run is read whole (its counts must stay exact)

    def __init__(self, *, max_calls: int | None = DEFAULT_MAX_CALLS, **shared: Any) -> None:
        if not (max_calls is None or (type(max_calls) is int and max_calls >= 1)):  # else: its error
            max_calls = check_int(f"{self.type_name}.max_calls", max_calls, low=1, allow_none=True)
        self.max_calls = max_calls
        super().__init__(**shared)

    def evaluate(self, output: Any, expected: Any, *, input: Any = None) -> EvalResult:
        """Score both sides cut to ``max_calls`` calls; ``details["truncated_to"]`` when cut.
        Skipped when tool calls are compared and an `Expected` gives none.

        The body of `Evaluator.evaluate` is repeated here rather than reached through
        ``super()``, and a `Measurement` with a float score inside the score range is turned
        into its result here as `Evaluator._finish` would (anything else goes to ``_finish``):
        a run evaluator's metric takes a few microseconds, and each layer counts.
        """
        cut = None
        limit = self.max_calls
        if self.requires_expected:
            if expected is None:
                return self._skipped()
            if type(expected) is not list and isinstance(expected, Expected) and expected.tool_calls is None:
                return EvalResult(
                    name=self.name, threshold=self.threshold, status="skipped", explanation=NO_EXPECTED_CALLS
                )
            if limit is not None and not (
                _within(output, limit, self.cuts_runs) and type(expected) is list and len(expected) <= limit
            ):
                output, expected, cut = cut_calls(output, expected, limit, runs=self.cuts_runs)
        elif limit is not None and not _within(output, limit, self.cuts_runs):
            output, expected, cut = cut_calls(output, expected, limit, runs=self.cuts_runs, sides_both=False)
        start = perf_counter()
        try:
            value = self.measure(output, expected, input=input)
        except Exception as exc:
            result = self._error(exc, perf_counter() - start)
        else:
            duration_s = perf_counter() - start
            low, high = self.score_range
            if (
                type(value) is Measurement
                and type(score := value.score) is float
                and isfinite(score)
                and low <= score <= high
            ):
                passed = self.passes(score)
                label = value.label
                if label is None and passed is not None:
                    label = "pass" if passed else "fail"
                result = measured_result(
                    self.name,
                    score,
                    passed,
                    label,
                    self.threshold,
                    duration_s,
                    value.explanation,
                    value.details,
                )
            else:
                result = self._finish(value, duration_s)
        if cut is not None and result.status != "skipped":
            result.details["truncated_to"] = cut
        return result


def _within(value: Any, limit: int, runs: bool) -> bool:
    """Whether ``value`` surely holds no more than ``limit`` calls, so `cut_calls` would leave it
    whole (False when it cannot tell at a glance: `cut_calls` then decides)."""
    kind = type(value)
    if kind is list:
        return len(value) <= limit
    if kind is Run:
        if not runs:
            return True  # read whole
        steps = value.steps
        if len(steps) > limit:
            return False
        for step in steps:  # noqa: SIM110 - a loop: faster than any() over a generator
            if step.requested:
                return False
        return True
    return False
