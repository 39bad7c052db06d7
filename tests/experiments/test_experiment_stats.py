"""``repeat=N``: per-case mean, spread and pass@k of a task with scripted randomness."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest

from tracesim.evaluators import evaluator
from tracesim.experiments import Case, Dataset, pass_at_k, pass_hat_k


@evaluator(threshold=0.3, requires_expected=False)
def value(output: float, expected: Any) -> float:
    """The output is the score: the task's draw, compared with the threshold 0.3."""
    return output


def scripted_task() -> Any:
    """Draws from one seeded generator per case: the same five values per case in any run order."""
    lock = threading.Lock()
    generators: dict[str, random.Random] = {}

    def task(question: dict[str, Any]) -> float:
        with lock:
            rng = generators.setdefault(question["q"], random.Random(f"seed-{question['q']}"))
            return round(rng.random() * question.get("scale", 1.0), 2)

    return task


DATASET = Dataset(
    [
        Case({"q": "alpha"}, id="alpha"),  # draws 0.09 0.94 0.97 0.97 0.45: 4 of 5 pass
        Case({"q": "beta"}, id="beta"),  # 0.04 0.11 0.89 0.23 0.38: 2 pass
        Case({"q": "gamma"}, id="gamma"),  # 0.65 0.35 0.56 0.63 0.7: all pass
        Case({"q": "delta", "scale": 0.25}, id="delta"),  # at most 0.25: none passes
    ]
)


@pytest.mark.parametrize("concurrency", [1, 4])
def test_repeat_five_gives_exact_statistics(concurrency: int) -> None:
    report = DATASET.evaluate(scripted_task(), evaluators=[value], repeat=5, max_concurrency=concurrency)
    assert len(report.rows) == 20
    assert report.repeat == 5
    cases = {case.case_id: case for case in report.cases}
    alpha = cases["alpha"]
    assert sorted(r.output for r in alpha.runs) == [0.09, 0.45, 0.94, 0.97, 0.97]
    stats = alpha.scores["value"]
    assert (stats.count, stats.min, stats.max) == (5, 0.09, 0.97)
    assert stats.mean == pytest.approx(0.684)
    assert stats.stdev == pytest.approx(0.398973683)  # sample stdev: sqrt(0.63672 / 4)
    expected = {  # case: (passed, pass@1, pass@5, pass^5, mean)
        "alpha": (4, 0.8, 1.0, 0.0, 0.684),
        "beta": (2, 0.4, 1.0, 0.0, 0.33),
        "gamma": (5, 1.0, 1.0, 1.0, 0.578),
    }
    for case_id, (passed, at_1, at_5, hat_5, mean) in expected.items():
        case = cases[case_id]
        assert (case.passed, case.decided) == (passed, 5)
        assert (case.pass_rate, case.pass_at_k, case.pass_hat_k) == (at_1, at_5, hat_5)
        assert case.scores["value"].mean == pytest.approx(mean)
    delta = cases["delta"]
    assert (delta.passed, delta.pass_at_k, delta.pass_hat_k) == (0, 0.0, 0.0)
    assert report.pass_rate == pytest.approx(11 / 20)
    assert report.pass_at_1 == pytest.approx(0.55)  # (0.8 + 0.4 + 1 + 0) / 4
    assert report.pass_at_k == 0.75  # three cases of four passed at least once
    assert report.pass_hat_k == 0.25  # one case passed every time
    text = report.table()
    assert "over 5 runs per case: pass@1 0.550, pass@5 0.750, pass^5 0.250" in text
    assert "0.684±0.399" in text
    assert "4/5 passed" in text
    assert [c.case_id for c in report.worst_first()] == ["delta", "beta", "alpha", "gamma"]


def test_pass_at_k_is_the_unbiased_estimator() -> None:
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)  # 1 - C(3,2)/C(5,2)
    assert pass_at_k(10, 1, 10) == 1.0
    assert pass_at_k(10, 0, 1) == 0.0
    assert pass_hat_k(5, 4, 2) == pytest.approx(6 / 10)  # C(4,2)/C(5,2)
    with pytest.raises(ValueError, match="1 <= k <= n"):
        pass_at_k(3, 1, 4)
