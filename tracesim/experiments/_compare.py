"""A run against a baseline: what got better or worse, run-wide and case by case.

Cases are matched by id as a run's file writes it (a redacted id keeps a keyed suffix that is
the same in every run made with the same key, see `tracesim.experiments._case_ids`); redacted
ids that match nothing on the other side, when none matched, are noted, naming the key's
setting. Each number is compared with its direction (a distance improves by going down) and
counts as changed only beyond ``tolerance``, an absolute difference on scores and rates. A
case is ``regressed`` when any of its numbers got worse, ``improved`` when some got better and
none worse; cases only in one run are ``new`` or ``missing`` (a changed dataset, not a
regression).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from tracesim.experiments._case_ids import ID_KEY_ENV, is_redacted, written_ids

if TYPE_CHECKING:
    from tracesim.experiments._run_view import RunView
    from tracesim.experiments._stats import CaseSummary

__all__ = ["CaseChange", "Change", "Comparison", "compare"]

Verdict = Literal["better", "worse", "same"]
CaseStatus = Literal["regressed", "improved", "unchanged", "new", "missing"]


@dataclass(frozen=True)
class Change:
    """One number before and after: ``subject`` is ``run``, an evaluator or a case id.

    Example:
        >>> change = Change("q3", "exact mean score", 1.0, 0.0)
        >>> change.delta, change.verdict(0.02)
        (-1.0, 'worse')
        >>> Change("q3", "distance mean score", 4.0, 2.0, higher_is_better=False).verdict(0.5)
        'better'
    """

    subject: str
    metric: str
    before: float | None
    after: float | None
    higher_is_better: bool = True

    @property
    def delta(self) -> float | None:
        """``after - before`` (rounded to 12 places so float noise never crosses a tolerance)."""
        if self.before is None or self.after is None:
            return None
        return round(self.after - self.before, 12)

    def verdict(self, tolerance: float) -> Verdict:
        """``better``, ``worse`` or ``same`` (within ``tolerance``, or not comparable)."""
        delta = self.delta
        if delta is None or abs(delta) <= tolerance:
            return "same"
        return "better" if (delta > 0) == self.higher_is_better else "worse"

    def describe(self) -> str:
        """E.g. ``pass rate 1.000 → 0.500 (-0.500)``."""
        delta = self.delta
        shift = "" if delta is None else f" ({delta:+.3f})"
        return f"{self.metric} {_number(self.before)} → {_number(self.after)}{shift}"


@dataclass(frozen=True)
class CaseChange:
    """How one case moved: its status and the numbers that moved beyond the tolerance."""

    case_id: str
    status: CaseStatus
    changes: tuple[Change, ...] = ()


@dataclass(frozen=True)
class Comparison:
    """A run set against a baseline; ``ok`` is what a CI gate checks.

    ``regressions`` are the run-wide numbers that got worse beyond the tolerance and, unless
    the comparison was made with ``per_case=False``, the worse numbers of regressed cases.

    Example:
        >>> from tracesim.experiments import Case, Dataset
        >>> dataset = Dataset([Case("2+2", "4", id="add"), Case("2*3", "6", id="mul")])
        >>> baseline = dataset.evaluate(lambda q: str(eval(q)), evaluators=["exact"])
        >>> run = dataset.evaluate(lambda q: "4", evaluators=["exact"])
        >>> comparison = run.compare(baseline)
        >>> comparison.ok, [(c.case_id, c.status) for c in comparison.cases]
        (False, [('add', 'unchanged'), ('mul', 'regressed')])
        >>> [r.describe() for r in comparison.regressions][0]
        'pass rate 1.000 → 0.500 (-0.500)'
    """

    run: str
    baseline: str
    tolerance: float
    per_case: bool
    metrics: tuple[Change, ...]
    cases: tuple[CaseChange, ...]
    notes: tuple[str, ...] = ()

    @property
    def regressions(self) -> tuple[Change, ...]:
        """The changes that fail the comparison."""
        found = [m for m in self.metrics if m.verdict(self.tolerance) == "worse"]
        if self.per_case:
            found += [c for case in self.cases for c in case.changes if c.verdict(self.tolerance) == "worse"]
        return tuple(found)

    @property
    def improvements(self) -> tuple[Change, ...]:
        """The run-wide numbers and case numbers that got better beyond the tolerance."""
        every = [*self.metrics, *(c for case in self.cases for c in case.changes)]
        return tuple(c for c in every if c.verdict(self.tolerance) == "better")

    @property
    def ok(self) -> bool:
        """True when nothing got worse beyond the tolerance."""
        return not self.regressions

    def by_status(self, status: CaseStatus) -> list[CaseChange]:
        """The cases with ``status``, in dataset order."""
        return [case for case in self.cases if case.status == status]

    def __str__(self) -> str:
        return "\n".join(self._lines())

    def _lines(self) -> Iterator[str]:
        from tracesim._terminal import visible

        yield visible(f"{self.run} compared with baseline {self.baseline} (tolerance {self.tolerance:g})")
        for change in self.metrics:
            verdict = change.verdict(self.tolerance)
            mark = {"better": "better", "worse": "WORSE", "same": "same"}[verdict]
            yield visible(f"  {change.subject:<14} {change.describe():<44} {mark}")
        counts = ", ".join(
            f"{len(self.by_status(s))} {s}" for s in ("regressed", "improved", "unchanged", "new", "missing")
        )
        yield f"cases: {counts}"
        for status in ("regressed", "improved", "new", "missing"):
            for case in self.by_status(status):
                detail = "; ".join(c.describe() for c in case.changes)
                yield visible(f"  {status:<9} {case.case_id}" + (f": {detail}" if detail else ""))
        yield from (visible(f"note: {note}") for note in self.notes)
        if self.ok:
            yield f"OK: nothing got worse by more than {self.tolerance:g}"
        else:
            yield f"REGRESSION: {len(self.regressions)} numbers got worse by more than {self.tolerance:g}"

    def to_dict(self) -> dict[str, Any]:
        """The comparison as JSON-ready data."""

        def change(c: Change) -> dict[str, Any]:
            return {
                "subject": c.subject,
                "metric": c.metric,
                "before": c.before,
                "after": c.after,
                "delta": c.delta,
                "verdict": c.verdict(self.tolerance),
            }

        return {
            "run": self.run,
            "baseline": self.baseline,
            "tolerance": self.tolerance,
            "ok": self.ok,
            "metrics": [change(c) for c in self.metrics],
            "cases": [
                {"case_id": c.case_id, "status": c.status, "changes": [change(x) for x in c.changes]}
                for c in self.cases
            ],
            "notes": list(self.notes),
        }


def compare(run: RunView, baseline: RunView, *, tolerance: float = 0.0, per_case: bool = True) -> Comparison:
    """Set ``run`` against ``baseline`` (see `ExperimentReport.compare`)."""
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not tolerance >= 0:
        raise ValueError(f"tolerance must be a number of 0 or more, got {tolerance!r}")
    directions = {e.name: e.higher_is_better for e in baseline.evaluators}
    directions.update({e.name: e.higher_is_better for e in run.evaluators})
    shared = [e.name for e in run.evaluators if e.name in {b.name for b in baseline.evaluators}]
    metrics = [
        Change("run", "pass rate", baseline.pass_rate, run.pass_rate),
        Change("run", "error rate", _error_rate(baseline), _error_rate(run), higher_is_better=False),
    ]
    for name in shared:
        before, after = baseline.summary[name], run.summary[name]
        metrics.append(Change(name, "mean score", before.mean, after.mean, directions[name]))
        metrics.append(Change(name, "pass rate", before.pass_rate, after.pass_rate))
    # Matched by id as written: a run made here (ids raw) meets a saved baseline (ids redacted).
    before_ids = written_ids(case.case_id for case in baseline.cases)
    after_ids = written_ids(case.case_id for case in run.cases)
    old = {before_ids[case.case_id]: case for case in baseline.cases}
    cases = []
    for case in run.cases:
        case_id = after_ids[case.case_id]
        previous = old.pop(case_id, None)
        if previous is None:
            cases.append(CaseChange(case_id, "new"))
        else:
            cases.append(_case_change(case_id, previous, case, shared, directions, tolerance))
    cases += [CaseChange(case_id, "missing") for case_id in old]
    notes = _unmatched_note(cases)
    notes += [
        f"evaluator {e.name!r} is only in the baseline" for e in baseline.evaluators if e.name not in shared
    ]
    notes += [f"evaluator {e.name!r} is new in this run" for e in run.evaluators if e.name not in shared]
    if run.repeat != baseline.repeat:
        notes.append(f"repeat differs: {baseline.repeat} in the baseline, {run.repeat} now")
    return Comparison(
        _label(run), _label(baseline), float(tolerance), per_case, tuple(metrics), tuple(cases), tuple(notes)
    )


def _case_change(
    case_id: str,
    before: CaseSummary,
    after: CaseSummary,
    shared: list[str],
    directions: dict[str, bool],
    tolerance: float,
) -> CaseChange:
    numbers = [
        Change(case_id, "pass rate", before.pass_rate, after.pass_rate),
        Change(case_id, "error rate", before.error_rate, after.error_rate, higher_is_better=False),
    ]
    for name in shared:
        old, new = before.scores.get(name), after.scores.get(name)
        numbers.append(
            Change(
                case_id,
                f"{name} mean score",
                None if old is None else old.mean,
                None if new is None else new.mean,
                directions[name],
            )
        )
    moved = tuple(n for n in numbers if n.verdict(tolerance) != "same")
    verdicts = {n.verdict(tolerance) for n in moved}
    status: CaseStatus = "regressed" if "worse" in verdicts else "improved" if verdicts else "unchanged"
    return CaseChange(case_id, status, moved)


def _unmatched_note(cases: list[CaseChange]) -> list[str]:
    """A note when redacted case ids match nothing on the other side and none matched: the two
    runs' ids were likely made with different keys. One redacted id matched shows the keys
    agree, and the others are then new or missing cases."""
    redacted = [c.status for c in cases if is_redacted(c.case_id)]
    new, missing = redacted.count("new"), redacted.count("missing")
    if len(redacted) > new + missing or not redacted:
        return []
    if new and missing:
        what = f"{new} redacted case {_ids(new)} of this run and {missing} of the baseline"
        what += " match nothing on the other side"
    elif new:
        what = f"{new} redacted case {_ids(new)} of this run {_match(new)} nothing in the baseline"
    else:
        what = (
            f"{missing} redacted case {_ids(missing)} of the baseline {_match(missing)} nothing in this run"
        )
    return [
        f"{what}: if they are the same cases, the two runs were made with different id keys (or the "
        f"baseline by an older tracesim, which numbered them -2, -3); set {ID_KEY_ENV} to the same "
        "secret wherever runs are made (docs/experiments.md, 'Redacted case ids')"
    ]


def _ids(count: int) -> str:
    return "id" if count == 1 else "ids"


def _match(count: int) -> str:
    return "matches" if count == 1 else "match"


def _error_rate(report: RunView) -> float | None:
    return report.errors / len(report.rows) if report.rows else None


def _label(report: RunView) -> str:
    when = f", {report.started_at[:19]}" if report.started_at else ""
    return f"{report.name!r} ({report.dataset}{when})"


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"
