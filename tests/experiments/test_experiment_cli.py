"""``tracesim experiment``: a run written as JSON and HTML, a baseline gate, usage errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tracesim.cli._experiment import main
from tracesim.experiments import ExperimentReport
from tracesim.tracefile import load_spans

CASES = [
    {"id": "poland", "question": "capital of Poland", "expected": "Warsaw"},
    {"id": "france", "question": "capital of France", "expected": "Paris"},
    {"id": "italy", "question": "capital of Italy", "expected": "Rome"},
]
TASK = """
import tracesim

ANSWERS = {answers!r}

@tracesim.trace(kind="agent")
def answer(question):
    return ANSWERS[question]
"""
GOOD = {"capital of Poland": "Warsaw", "capital of France": "Paris", "capital of Italy": "Rome"}


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "capitals.jsonl"
    path.write_text("".join(json.dumps(case) + "\n" for case in CASES), encoding="utf-8")
    return path


def task_file(folder: Path, name: str, answers: dict[str, str]) -> str:
    (folder / f"{name}.py").write_text(TASK.format(answers=answers), encoding="utf-8")
    return f"{name}:answer"


class Cases(HTMLParser):
    """The case rows of the page, in order: (case id, trace ids)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "tr" and found.get("class") == "case":
            self.rows.append((found["data-case-id"] or "", found["data-trace-ids"] or ""))


def test_a_run_writes_json_and_html_and_a_regression_exits_1(
    tmp_path: Path, dataset: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = task_file(tmp_path, "capitals_good", GOOD)
    base = ["run", good, "--dataset", str(dataset), "--input", "question", "-e", "levenshtein:threshold=0.5"]
    base += ["--no-progress"]
    assert main([*base, "--out", "baseline.json"]) == 0
    assert "3 passed, 0 failed" in capsys.readouterr().out

    worse = task_file(
        tmp_path, "capitals_worse", {**GOOD, "capital of France": "Lyon", "capital of Italy": "Roma"}
    )
    argv = ["run", worse, *base[2:]]
    argv += [
        "--out",
        "run.json",
        "--html",
        "report.html",
        "--baseline",
        "baseline.json",
        "--tolerance",
        "0.02",
    ]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "cases: 2 regressed, 0 improved, 1 unchanged, 0 new, 0 missing" in out
    assert "REGRESSION" in out

    run = ExperimentReport.load("run.json")
    assert run.name == "answer"
    assert run.dataset == "capitals"
    assert [(r.case_id, r.output, r.score("levenshtein")) for r in run.rows] == [
        ("poland", "Warsaw", 1.0),
        ("france", "Lyon", 0.0),
        ("italy", "Roma", 0.75),
    ]
    spans = {s.trace_id: s for s in load_spans(".tracesim/traces.jsonl") if s.name == "experiment answer"}
    assert all(spans[r.trace_id].span_id == r.span_id for r in run.rows)  # the command traced every run

    page = Cases()
    page.feed(Path("report.html").read_text(encoding="utf-8"))
    assert [case_id for case_id, _ in page.rows] == ["france", "italy", "poland"]  # worst first
    assert [trace_ids for _, trace_ids in page.rows] == [
        run.row(c).trace_id for c in ("france", "italy", "poland")
    ]

    assert main(["compare", "run.json", "baseline.json"]) == 1
    assert main(["compare", "run.json", "baseline.json", "--tolerance", "0.5", "--aggregate-only"]) == 0
    assert main(["compare", "baseline.json", "baseline.json", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["ok"] is True


def test_gates_on_the_pass_rate(tmp_path: Path, dataset: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task = task_file(tmp_path, "capitals_half", {**GOOD, "capital of Italy": "Milan"})
    argv = ["run", task, "--dataset", str(dataset), "--input", "question", "-e", "exact"]
    argv += ["--no-progress", "--no-traces"]
    assert main([*argv, "--min-pass-rate", "60%"]) == 0
    assert main([*argv, "--min-pass-rate", "0.9"]) == 1
    assert "--min-pass-rate 0.900: pass rate 0.667: FAILED" in capsys.readouterr().err
    assert main([*argv, "--fail-under", "exact=0.7"]) == 1
    assert "--fail-under exact: pass rate 0.667 < 0.700 (2 of 3 passed): FAILED" in capsys.readouterr().err
    assert Path(".tracesim/experiments/answer.json").is_file()  # the default place of the run
    assert not Path(".tracesim/traces.jsonl").exists()  # --no-traces


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"task": "nowhere_to_be_found:answer"}, "cannot import 'nowhere_to_be_found': ModuleNotFoundError"),
        ({"task": "answer"}, "expected module:function or path/to/file.py:function"),
        ({"task": "capitals_usage:missing"}, "capitals_usage has no 'missing'"),
        ({"dataset": "absent.jsonl"}, "absent.jsonl: cannot read the file"),
        ({"evaluator": "no_such_metric"}, "no_such_metric"),
        ({"extra": ["--repeat", "0"]}, "--repeat 0: expected 1 or more"),
        ({"extra": ["--baseline", "missing.json"]}, "--baseline missing.json: cannot read it"),
        ({"extra": ["--min-pass-rate", "lots"]}, "--min-pass-rate 'lots': expected a fraction"),
        ({"extra": ["--fail-under", "rouge=0.5"]}, "no evaluator named 'rouge' (have: exact)"),
    ],
)
def test_usage_errors_exit_2_and_say_what_to_change(
    tmp_path: Path, dataset: Path, capsys: pytest.CaptureFixture[str], change: dict[str, object], message: str
) -> None:
    task = task_file(tmp_path, "capitals_usage", GOOD)
    argv = ["run", str(change.get("task", task)), "--dataset", str(change.get("dataset", dataset))]
    argv += ["--input", "question"]
    argv += ["-e", str(change.get("evaluator", "exact")), "--no-progress", "--no-traces"]
    argv += list(change.get("extra", []))  # type: ignore[call-overload]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_a_task_given_as_a_file_path(tmp_path: Path, dataset: Path) -> None:
    folder = tmp_path / "agents"
    folder.mkdir()
    (folder / "capitals_helper.py").write_text(f"ANSWERS = {GOOD!r}\n", encoding="utf-8")
    (folder / "capitals_file.py").write_text(
        "from capitals_helper import ANSWERS\n\nasync def answer(question):\n    return ANSWERS[question]\n",
        encoding="utf-8",
    )
    argv = ["run", "agents/capitals_file.py:answer", "--dataset", str(dataset), "--input", "question"]
    argv += ["-e", "exact"]
    assert main([*argv, "--no-progress", "--no-traces", "--min-pass-rate", "1", "-o", "file.json"]) == 0
    assert ExperimentReport.load("file.json").pass_rate == 1.0


def test_the_tracesim_command_runs_experiments(tmp_path: Path, dataset: Path) -> None:
    """The registered subcommand, in a fresh process, as CI runs it."""
    good = task_file(tmp_path, "capitals_cli_good", GOOD)
    worse = task_file(tmp_path, "capitals_cli_worse", {**GOOD, "capital of Poland": "Krakow"})
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACESIM_", "OTEL_"))}

    def tracesim(*argv: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "tracesim", "experiment", *argv]
        return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)

    evaluator = ["--dataset", dataset.name, "--input", "question", "-e", "levenshtein:threshold=0.8"]
    first = tracesim("run", good, *evaluator, "--out", "base.json")
    assert first.returncode == 0, first.stderr
    second = tracesim("run", worse, *evaluator, "--baseline", "base.json", "--html", "report.html")
    assert second.returncode == 1, second.stderr
    assert "regressed poland" in " ".join(second.stdout.split())
    assert (tmp_path / "report.html").is_file()
    assert tracesim("run", good, "--dataset", "absent.jsonl").returncode == 2
