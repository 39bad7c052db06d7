"""Run the agent over the dataset, print the report, keep the run, compare with a baseline.

cd examples/experiments && python run.py            # first run: becomes the baseline
python run.py                                       # later runs: compared with it; exit 1 on a regression
"""

from __future__ import annotations

import sys
from pathlib import Path

from agent import answer

import tracesim
from tracesim.evaluators import Levenshtein, Rouge
from tracesim.experiments import Dataset, ExperimentReport

HERE = Path(__file__).parent


def main() -> int:
    tracesim.configure(service_name="qa-agent")  # each run becomes a trace in .tracesim/traces.jsonl
    dataset = Dataset.from_file(HERE / "cases.jsonl", input="question")
    report = dataset.evaluate(answer, evaluators=[Levenshtein(threshold=0.8), Rouge("rougeL", threshold=0.5)])
    print(report)
    report.to_html("report.html")
    baseline = Path("baseline.json")
    if not baseline.exists():
        report.to_json(baseline)
        print(f"\nno baseline yet: this run is now {baseline}")
        return 0
    report.to_json("run.json")
    comparison = report.compare(ExperimentReport.load(baseline), tolerance=0.02)
    print(f"\n{comparison}")
    return 0 if comparison.ok else 1


if __name__ == "__main__":
    sys.exit(main())
