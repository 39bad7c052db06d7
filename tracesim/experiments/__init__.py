"""Experiments: run a task over a dataset of cases, score every output, compare runs.

`tracesim eval` scores outputs computed elsewhere; an experiment computes them. A `Dataset`
holds `Case` objects (an input, the expected output, metadata), written in code or read from
a JSONL, CSV or YAML file. `Dataset.evaluate` runs a sync or async task on every case (each
run a trace of its own when tracesim is configured), scores it with evaluators, and returns an
`ExperimentReport`: rows, per-evaluator summaries, pass@k over repeats, a text table, JSON
and HTML files, and `compare` against a baseline run for CI.

    >>> from tracesim.experiments import Case, Dataset
    >>> dataset = Dataset([Case("2+2", expected="4"), Case("3*3", expected="9")])
    >>> report = dataset.evaluate(lambda question: str(eval(question)), evaluators=["exact"])
    >>> report.pass_rate, report.summary["exact"].mean
    (1.0, 1.0)

``tracesim experiment run TASK --dataset FILE`` is the same from the command line.
"""

from typing import TYPE_CHECKING, Any

from tracesim.experiments._case import Case, DatasetError
from tracesim.experiments._dataset import Dataset

if TYPE_CHECKING:
    from tracesim.experiments._case_results import CaseResult, EvaluatorInfo
    from tracesim.experiments._compare import CaseChange, Change, Comparison
    from tracesim.experiments._experiment_report import ExperimentReport
    from tracesim.experiments._stats import CaseSummary, EvaluatorSummary, ScoreStats, pass_at_k, pass_hat_k

# `tracesim` re-exports Case and Dataset, so this package is imported with it: the report
# and comparison modules (a few dozen milliseconds of dataclasses) load on first use instead.
_LAZY = {
    "CaseChange": "_compare",
    "Change": "_compare",
    "Comparison": "_compare",
    "CaseResult": "_case_results",
    "EvaluatorInfo": "_case_results",
    "ExperimentReport": "_experiment_report",
    "CaseSummary": "_stats",
    "EvaluatorSummary": "_stats",
    "ScoreStats": "_stats",
    "pass_at_k": "_stats",
    "pass_hat_k": "_stats",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tracesim.experiments' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"tracesim.experiments.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "Case",
    "CaseChange",
    "CaseResult",
    "CaseSummary",
    "Change",
    "Comparison",
    "Dataset",
    "DatasetError",
    "EvaluatorInfo",
    "EvaluatorSummary",
    "ExperimentReport",
    "ScoreStats",
    "pass_at_k",
    "pass_hat_k",
]
