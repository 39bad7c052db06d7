"""A run against its baseline: regressions beyond the tolerance fail, changes within it do not."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from tracesim.evaluators import ExactMatch, Levenshtein, LevenshteinDistance
from tracesim.experiments import Case, Dataset, ExperimentReport

DATASET = Dataset(
    [
        Case("capital of Poland", "Warsaw", id="poland"),
        Case("capital of France", "Paris", id="france"),
        Case("capital of Italy", "Rome", id="italy"),
    ]
)
GOOD = {"capital of Poland": "Warsaw", "capital of France": "Paris", "capital of Italy": "Rome"}


def run(answers: Mapping[str, str], dataset: Dataset = DATASET, **options: object) -> ExperimentReport:
    def task(question: str) -> str:
        return answers[question]  # a KeyError for an unknown question: an erroring run

    return dataset.evaluate(task, evaluators=[Levenshtein(threshold=0.5)], name="capitals", **options)  # type: ignore[arg-type]


def test_a_regressed_case_is_flagged_beyond_the_tolerance_and_not_within() -> None:
    baseline = run(GOOD)
    # "Parris" is 1 - 1/6 = 0.83 similar to "Paris": still passing, but the score fell by 0.17
    slipped = run({**GOOD, "capital of France": "Parris"})
    comparison = slipped.compare(baseline, tolerance=0.05)
    assert not comparison.ok
    assert [(c.case_id, c.status) for c in comparison.cases] == [
        ("poland", "unchanged"),
        ("france", "regressed"),
        ("italy", "unchanged"),
    ]
    [france] = comparison.by_status("regressed")
    assert [(c.metric, c.before, c.after, c.delta) for c in france.changes] == [
        ("levenshtein mean score", 1.0, 0.83, -0.17)
    ]
    assert "REGRESSION" in str(comparison)
    assert "regressed france" in " ".join(str(comparison).split())
    # the same drop within the tolerance is no regression
    assert slipped.compare(baseline, tolerance=0.2).ok
    # run-wide only: the mean fell by 0.17 / 3 = 0.057, so 0.06 lets it through although the case moved
    lenient = slipped.compare(baseline, tolerance=0.06, per_case=False)
    assert lenient.ok
    assert lenient.by_status("regressed")[0].case_id == "france"
    assert not slipped.compare(baseline, tolerance=0.05, per_case=False).ok


def test_an_erroring_case_regresses_its_pass_and_error_rates() -> None:
    baseline = run(GOOD)
    broken = run({k: v for k, v in GOOD.items() if k != "capital of Italy"})
    comparison = broken.compare(baseline, tolerance=0.02)
    metrics = {(c.subject, c.metric): c.verdict(0.02) for c in comparison.metrics}
    assert metrics[("run", "pass rate")] == "worse"
    assert metrics[("run", "error rate")] == "worse"
    italy = comparison.by_status("regressed")[0]
    assert {c.metric for c in italy.changes} == {"pass rate", "error rate"}
    assert comparison.to_dict()["ok"] is False


def test_improvements_new_and_missing_cases() -> None:
    baseline = run({**GOOD, "capital of Italy": "Milan"})
    grown = Dataset([*DATASET.cases[1:], Case("capital of Spain", "Madrid", id="spain")])
    better = run({**GOOD, "capital of Spain": "Madrid"}, dataset=grown)
    comparison = better.compare(baseline)
    statuses = {c.case_id: c.status for c in comparison.cases}
    assert statuses == {"france": "unchanged", "italy": "improved", "spain": "new", "poland": "missing"}
    assert comparison.ok  # a changed dataset is shown, not a regression


def test_lower_is_better_evaluators_regress_upwards() -> None:
    distance = [LevenshteinDistance(threshold=2)]
    baseline = DATASET.evaluate(GOOD.__getitem__, evaluators=distance)
    worse = DATASET.evaluate({**GOOD, "capital of Italy": "Roma!"}.__getitem__, evaluators=distance)
    comparison = worse.compare(baseline)
    assert [c.case_id for c in comparison.by_status("regressed")] == ["italy"]
    assert baseline.compare(worse).by_status("improved")[0].case_id == "italy"


def test_evaluators_in_only_one_run_are_noted_not_compared() -> None:
    baseline = DATASET.evaluate(GOOD.__getitem__, evaluators=[ExactMatch()])
    now = DATASET.evaluate(GOOD.__getitem__, evaluators=[Levenshtein()], repeat=2)
    comparison = now.compare(baseline)
    assert comparison.notes == (
        "evaluator 'exact' is only in the baseline",
        "evaluator 'levenshtein' is new in this run",
        "repeat differs: 1 in the baseline, 2 now",
    )
    with pytest.raises(ValueError, match="tolerance must be a number of 0 or more"):
        now.compare(baseline, tolerance=-1)
