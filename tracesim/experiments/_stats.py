"""The numbers of an experiment: per evaluator, per case over repeats, pass@k.

Definitions (also in ``docs/experiments.md``):

- a run *passes* when the task returned and every evaluator that decided passed; a task error
  or an evaluator error fails it; a run no evaluator decided on (all skipped, or no
  thresholds) is undecided and left out of pass rates;
- an evaluator's ``mean`` averages its finite ``ok`` scores; its ``pass_rate`` is
  ``passed / (passed + failed + errors)``: an error counts as a failure, as in ``tracesim eval``;
- per case over ``n`` decided runs of which ``c`` passed: ``pass@k = 1 - C(n-c, k) / C(n, k)``,
  the unbiased estimator of Chen et al. (2021), "Evaluating Large Language Models Trained on
  Code": the chance that at least one of ``k`` runs drawn from the ``n`` passes; and
  ``pass^k = C(c, k) / C(n, k)``: the chance that all ``k`` pass (Yao et al., 2024, τ-bench);
- ``stdev`` is the sample standard deviation (``n - 1``), None below two scores.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tracesim.experiments._case_results import CaseResult, EvaluatorInfo

__all__ = ["CaseSummary", "EvaluatorSummary", "ScoreStats", "pass_at_k", "pass_hat_k"]


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that at least one of ``k`` runs passes, from ``c`` passes in ``n`` runs.

    Example:
        >>> pass_at_k(5, 2, 1), pass_at_k(5, 2, 5), pass_at_k(5, 0, 5)
        (0.4, 1.0, 0.0)
        >>> round(pass_at_k(10, 3, 2), 4)  # 1 - C(7, 2) / C(10, 2)
        0.5333
    """
    _check(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The chance that all of ``k`` runs pass (pass^k), from ``c`` passes in ``n`` runs.

    Example:
        >>> pass_hat_k(5, 5, 5), pass_hat_k(5, 4, 5), pass_hat_k(5, 4, 1)
        (1.0, 0.0, 0.8)
    """
    _check(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


@dataclass(frozen=True)
class ScoreStats:
    """One evaluator's scores of one case over its repeats.

    Example:
        >>> ScoreStats.of([0.5, 1.0, 0.0])
        ScoreStats(count=3, mean=0.5, stdev=0.5, min=0.0, max=1.0)
    """

    count: int
    mean: float | None
    stdev: float | None
    min: float | None
    max: float | None

    @classmethod
    def of(cls, scores: Sequence[float]) -> ScoreStats:
        """The statistics of ``scores`` (finite numbers)."""
        if not scores:
            return cls(0, None, None, None, None)
        stdev = statistics.stdev(scores) if len(scores) > 1 else None
        return cls(len(scores), statistics.fmean(scores), stdev, min(scores), max(scores))


@dataclass(frozen=True)
class EvaluatorSummary:
    """How one evaluator scored the whole run.

    Example:
        >>> EvaluatorSummary("exact", count=4, mean=0.75, passed=3, failed=1, errors=0, skipped=1).pass_rate
        0.75
    """

    name: str
    count: int
    mean: float | None
    passed: int
    failed: int
    errors: int
    skipped: int

    @property
    def pass_rate(self) -> float | None:
        """``passed / (passed + failed + errors)``; None when nothing was decided."""
        decided = self.passed + self.failed + self.errors
        return self.passed / decided if decided else None


def evaluator_summaries(rows: Iterable[CaseResult], names: Sequence[str]) -> dict[str, EvaluatorSummary]:
    """Per evaluator: count of ok results, mean score, passed, failed, errors, skipped."""
    scores: dict[str, list[float]] = {name: [] for name in names}
    counts = {name: [0, 0, 0, 0] for name in names}  # passed, failed, errors, skipped
    for row in rows:
        for name, result in row.scores.items():
            if name not in counts:
                continue
            tally = counts[name]
            if result.status == "error":
                tally[2] += 1
            elif result.status == "skipped":
                tally[3] += 1
            else:
                if result.score is not None and math.isfinite(result.score):
                    scores[name].append(result.score)
                if result.passed is not None:
                    tally[0 if result.passed else 1] += 1
    return {
        name: EvaluatorSummary(
            name,
            len(scores[name]),
            statistics.fmean(scores[name]) if scores[name] else None,
            *counts[name],
        )
        for name in names
    }


@dataclass(frozen=True)
class CaseSummary:
    """One case over its repeats: pass counts, pass@k, score statistics, its runs.

    ``k`` in ``pass_at_k`` and ``pass_hat_k`` is the number of decided runs (the ``repeat``
    of the experiment when every run was decided).
    """

    case_id: str
    runs: tuple[CaseResult, ...]
    scores: dict[str, ScoreStats]
    passed: int
    decided: int
    errors: int

    @property
    def pass_rate(self) -> float | None:
        """Passed runs over decided runs (pass@1); None when no run was decided."""
        return self.passed / self.decided if self.decided else None

    @property
    def pass_at_k(self) -> float | None:
        """pass@k with k = the decided runs: 1.0 when any run passed."""
        return pass_at_k(self.decided, self.passed, self.decided) if self.decided else None

    @property
    def pass_hat_k(self) -> float | None:
        """pass^k with k = the decided runs: 1.0 when every run passed."""
        return pass_hat_k(self.decided, self.passed, self.decided) if self.decided else None

    @property
    def error_rate(self) -> float:
        """The share of runs in which the task raised (or timed out)."""
        return self.errors / len(self.runs)

    @property
    def worst_run(self) -> CaseResult:
        """The run to show for the case: the first that errored, else failed, else the first."""
        errored = [run for run in self.runs if run.error is not None]
        failed = [run for run in self.runs if run.passed is False]
        return (errored or failed or list(self.runs))[0]


def case_summaries(rows: Iterable[CaseResult], names: Sequence[str]) -> list[CaseSummary]:
    """One summary per case, in the order cases first appear in ``rows``."""
    grouped: dict[str, list[CaseResult]] = {}
    for row in rows:
        grouped.setdefault(row.case_id, []).append(row)
    summaries = []
    for case_id, runs in grouped.items():
        runs.sort(key=lambda r: r.repeat)
        stats = {}
        for name in names:
            values = [
                r.scores[name].score
                for r in runs
                if name in r.scores and r.scores[name].status == "ok" and _finite(r.scores[name].score)
            ]
            stats[name] = ScoreStats.of([v for v in values if v is not None])
        decided = [r.passed for r in runs if r.passed is not None]
        errors = sum(r.error is not None for r in runs)
        summaries.append(CaseSummary(case_id, tuple(runs), stats, sum(decided), len(decided), errors))
    return summaries


def _finite(score: float | None) -> bool:
    return score is not None and math.isfinite(score)


def worst_first(cases: Iterable[CaseSummary], evaluators: Sequence[EvaluatorInfo]) -> list[CaseSummary]:
    """Cases ordered worst first: most task errors, then lowest pass rate, then lowest mean score.

    The mean score averages the evaluators where higher is better (a distance is on another
    scale); ties keep the id order.
    """
    rising = [e.name for e in evaluators if e.higher_is_better]

    def key(case: CaseSummary) -> tuple[float, float, float, str]:
        means = [case.scores[n].mean for n in rising if n in case.scores and case.scores[n].mean is not None]
        mean = statistics.fmean(m for m in means if m is not None) if means else math.inf
        rate = case.pass_rate
        return (-case.error_rate, 1.0 if rate is None else rate, mean, case.case_id)

    return sorted(cases, key=key)
