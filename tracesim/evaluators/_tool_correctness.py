"""``tool_correctness``: how much of the expected tool calling a run did, from 0 to 1.

Gives the numbers of deepeval's ``ToolCorrectnessMetric`` (deepeval 4.3.1), its deterministic
part: the package's score is the lower of a tool-calling score and a tool-selection score, and
the selection score is 1 unless a list of available tools is judged by a model, which is out of
scope here. So the score is the tool-calling score, computed as the package computes it (the
same float operations in the same order, so the same floats).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate
from typing import Any, ClassVar

from tracesim._errors import ConfigError
from tracesim.evaluators._base import DEFAULT, Measurement, _Default
from tracesim.evaluators._call_cap import DEFAULT_MAX_CALLS, CappedCalls
from tracesim.evaluators._options import check_bool
from tracesim.evaluators._trajectory_match import _as_dict, _Call, expected_calls, output_calls

__all__ = ["ToolCorrectness"]

PARAMS = ("input_parameters", "output")


class ToolCorrectness(CappedCalls):
    """The share of expected tool calls the run made (0…1), as deepeval's ToolCorrectnessMetric.

    By default each expected call, in order, takes the unmatched actual call of its name that
    earns the most credit (the first on ties); the score is the credit summed over the expected
    calls divided by their number. Credit is 1 for the name alone; with ``params`` holding
    ``input_parameters`` it is the share of equal argument keys over the union of both calls'
    keys (nested objects earn their own share); with ``output`` a different output earns 0.
    ``consider_ordering``: the weighted longest common subsequence over the number of expected
    calls. ``exact_match``: 1 only if the lists agree position by position (names, and the
    ``params`` compared whole), else 0. Extra calls never lower the score. As in the package,
    matched calls are remembered by (name, arguments, output), so two identical actual calls
    count once. No expected calls: 1 when none were made, else 0. ``strict_mode``: the
    threshold is 1 and any score below 1 becomes 0. Arguments that are text (not a JSON
    object) earn credit only when equal as text; ``details["arguments_as_text"]`` names them.
    Each side is cut to its first ``max_calls`` calls (1,000 by default, which bounds the
    ordered mode's quadratic table; None for no cap), marked in ``details["truncated_to"]``.

    Example:
        >>> expected = [{"name": "search", "arguments": {"q": "warsaw", "n": 3}}, {"name": "answer"}]
        >>> actual = [{"name": "search", "arguments": {"q": "warsaw", "n": 5}}]
        >>> ToolCorrectness().evaluate(actual, expected).score
        0.5
        >>> result = ToolCorrectness(params=["input_parameters"]).evaluate(actual, expected)
        >>> result.score, result.details["missing"]
        (0.25, [{'name': 'answer', 'arguments': {}}])
    """

    type_name = "tool_correctness"
    default_threshold = 0.5
    score_range = (0.0, 1.0)
    scores_runs: ClassVar[bool] = True

    def __init__(
        self,
        *,
        consider_ordering: bool = False,
        exact_match: bool = False,
        params: Sequence[str] = (),
        strict_mode: bool = False,
        threshold: float | _Default | None = DEFAULT,
        max_calls: int | None = DEFAULT_MAX_CALLS,
        **shared: Any,
    ) -> None:
        key = self.type_name
        self.consider_ordering = check_bool(f"{key}.consider_ordering", consider_ordering)
        self.exact_match = check_bool(f"{key}.exact_match", exact_match)
        self.strict_mode = check_bool(f"{key}.strict_mode", strict_mode)
        accepted = "a list of any of 'input_parameters', 'output'"
        if isinstance(params, str) or not isinstance(params, Sequence):
            raise ConfigError(f"{key}.params", params, accepted)
        for item in params:
            if item not in PARAMS:
                raise ConfigError(f"{key}.params", item, accepted)
        self.params = tuple(dict.fromkeys(params))
        self._arguments = "input_parameters" in self.params
        self._output = "output" in self.params
        self._method = "exact_match" if exact_match else "ordering" if consider_ordering else "any_order"
        if self.strict_mode:
            if not isinstance(threshold, _Default) and threshold != 1:
                raise ConfigError(f"{key}.threshold", threshold, "1 (or nothing) with strict_mode")
            threshold = 1.0
        super().__init__(threshold=threshold, max_calls=max_calls, **shared)

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        called = output_calls(output)
        wanted = expected_calls(expected) or []
        details: dict[str, Any] = {"method": self._method, "params": list(self.params)}
        pairs: list[tuple[int, int, float]] = []
        if self.exact_match:
            score = self._exact(called, wanted, details)
        elif self.consider_ordering:
            if not wanted:
                score = 0.0 if called else 1.0
            else:
                score = self._ordered(called, wanted, pairs) / len(wanted)
        else:
            score = self._greedy(called, wanted, pairs)
        if not self.exact_match:
            # Loops rather than comprehensions: each comprehension is a function call, and these
            # lists are short.
            matched: list[list[Any]] = []  # [expected index, actual index, credit]
            partial: list[dict[str, Any]] = []
            for i, j, credit in pairs:
                matched.append([i, j, credit])
                if credit < 1:
                    partial.append(
                        {"expected": _as_dict(wanted[i]), "actual": _as_dict(called[j]), "credit": credit}
                    )
            details["matched"] = matched
            if len(pairs) == len(wanted) == len(called):
                details["missing"] = details["extra"] = []
            else:
                matched_wanted = {i for i, _, _ in pairs}
                matched_called = {j for _, j, _ in pairs}
                details["missing"] = [
                    _as_dict(call) for i, call in enumerate(wanted) if i not in matched_wanted
                ]
                details["extra"] = [
                    _as_dict(call) for j, call in enumerate(called) if j not in matched_called
                ]
            details["partial"] = partial
        if self.strict_mode and score < 1:
            score = 0.0
        texts: list[str] = []
        for call in called:
            if isinstance(call[1], str):
                texts.append(call[0])
        for call in wanted:
            if isinstance(call[1], str):
                texts.append(call[0])
        if texts:
            details["arguments_as_text"] = sorted(set(texts))
        return Measurement(float(score), details)

    def _credit(self, want: _Call, got: _Call) -> float:
        credit = 1.0
        if self._arguments:
            credit *= _share(want[1], got[1])
        if self._output and want[2] != got[2]:
            credit = 0.0
        return credit

    def _exact(self, called: list[_Call], wanted: list[_Call], details: dict[str, Any]) -> float:
        if len(called) != len(wanted):
            details["lengths"] = {"actual": len(called), "expected": len(wanted)}
            return 0.0
        for position, (got, want) in enumerate(zip(called, wanted, strict=True)):
            if (
                got[0] != want[0]
                or (self._arguments and got[1] != want[1])
                or (self._output and got[2] != want[2])
            ):
                details["first_difference"] = {
                    "position": position,
                    "actual": _as_dict(got),
                    "expected": _as_dict(want),
                }
                return 0.0
        return 1.0

    def _greedy(self, called: list[_Call], wanted: list[_Call], pairs: list[tuple[int, int, float]]) -> float:
        """Each expected call, in order, takes the untaken actual call of its name with the most
        credit (the first on ties), as the package pairs them.

        Scanning every actual call for every expected one, the taken calls searched one by one,
        is a billion comparisons at 1,000 calls of one name. Here the scan covers the calls of
        the expected call's name only, stops at the first call with full credit (no credit
        exceeds 1, and a later one would have to exceed it to be chosen), and on long lists a
        call is "taken" when the first call equal to it is (`_first_equal`), a set lookup. The
        pairs are the package's, call for call.
        """
        if not wanted:
            return 0.0 if called else 1.0
        by_name: dict[str, list[int]] = {}
        for j, got in enumerate(called):
            by_name.setdefault(got[0], []).append(j)
        weighted = self._arguments or self._output
        first = _first_equal(called, by_name) if len(called) > _SHORT else None
        taken_calls: list[_Call] = []  # compared by (name, arguments, output), as the package's set
        taken: set[int] = set()  # on long lists: the first call equal to each taken call
        total = 0.0
        for i, want in enumerate(wanted):
            best = 0.0
            best_index = -1
            for j in by_name.get(want[0], ()):
                if first is None:
                    if taken_calls and called[j] in taken_calls:
                        continue
                elif first[j] in taken:
                    continue
                credit = self._credit(want, called[j]) if weighted else 1.0
                if credit > best:
                    best = credit
                    best_index = j
                    if credit >= 1.0:
                        break
            if best > 0:
                total += best
                if first is None:
                    taken_calls.append(called[best_index])
                else:
                    taken.add(first[best_index])
                pairs.append((i, best_index, best))
        return total / len(wanted)

    def _ordered(
        self, called: list[_Call], wanted: list[_Call], pairs: list[tuple[int, int, float]]
    ) -> float:
        """The weighted longest common subsequence, as the package computes it.

        Row by row: a cell is the larger of the cell above and the one to its left, and where
        the names agree also the diagonal plus the credit. Taking ``above`` (and the diagonal
        where names agree) first and then a running maximum along the row gives the same
        cells; the running maximum runs in C (`itertools.accumulate`), so 1,000 by 1,000 calls
        take milliseconds rather than a second.
        """
        rows, cols = len(wanted), len(called)
        by_name: dict[str, list[int]] = {}
        for j, got in enumerate(called):
            by_name.setdefault(got[0], []).append(j + 1)
        weighted = self._arguments or self._output
        table = [[0.0] * (cols + 1)]
        for i in range(1, rows + 1):
            want = wanted[i - 1]
            above = table[i - 1]
            cells = above[:]
            for j in by_name.get(want[0], ()):
                credit = self._credit(want, called[j - 1]) if weighted else 1.0
                if credit > 0:
                    diagonal = above[j - 1] + credit
                    if diagonal > cells[j]:
                        cells[j] = diagonal
            table.append(list(accumulate(cells, max)))
        i, j, total = rows, cols, 0.0
        while i > 0 and j > 0:
            if table[i][j] == table[i - 1][j]:
                i -= 1
            elif table[i][j] == table[i][j - 1]:
                j -= 1
            else:
                gained = table[i][j] - table[i - 1][j - 1]
                total += gained
                pairs.append((i - 1, j - 1, gained))
                i, j = i - 1, j - 1
        pairs.reverse()
        return total

    def __repr__(self) -> str:
        return (
            f"ToolCorrectness(consider_ordering={self.consider_ordering}, exact_match={self.exact_match}, "
            f"params={list(self.params)!r}, strict_mode={self.strict_mode}, name={self.name!r}, "
            f"threshold={self.threshold!r})"
        )


_SHORT = 16
"""Up to this many actual calls, a taken call is looked up among the taken ones directly."""


def _first_equal(called: list[_Call], by_name: dict[str, list[int]]) -> list[int]:
    """For each call, the index of the first call equal to it (name, arguments and output, by
    ``==`` as the package's set compares them): equal calls are taken together."""
    first = list(range(len(called)))
    for indices in by_name.values():
        distinct: list[int] = []
        for j in indices:
            call = called[j]
            for k in distinct:
                if called[k] == call:
                    first[j] = k
                    break
            else:
                distinct.append(j)
    return first


def _share(expected: Any, actual: Any) -> float:
    """The share of equal keys over the union of keys, nested objects by their own share
    (as the package adds it up: ``1 / len(union)`` per equal key); text only when equal."""
    if expected == actual:
        return 1.0
    if not isinstance(expected, dict) or not isinstance(actual, dict):
        return 0.0
    union = len(expected.keys() | actual.keys())
    score: float = 0
    for key in expected:
        if key not in actual:
            continue
        mine, theirs = expected[key], actual[key]
        if mine == theirs:
            score += 1 / union
        elif isinstance(mine, dict) and isinstance(theirs, dict):
            score += _share(mine, theirs) / union
    return score
