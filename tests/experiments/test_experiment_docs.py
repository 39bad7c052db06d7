"""docs/experiments.md and examples/experiments do what they say; the modules' examples run."""

from __future__ import annotations

import contextlib
import doctest
import importlib
import io
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tracesim.cli._experiment import main
from tracesim.experiments import ExperimentReport
from tracesim.tracefile import load_spans

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "experiments"
MODULES = [
    "tracesim.experiments",
    *(
        f"tracesim.experiments._{name}"
        for name in (
            "case",
            "case_ids",
            "case_results",
            "compare",
            "dataset",
            "dataset_files",
            "experiment_report",
            "html_view",
            "run",
        )
    ),
    *(f"tracesim.experiments._{name}" for name in ("stats", "text_view")),
    "tracesim.cli._experiment",
]
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def normalized(text: str) -> list[str]:
    """Lines without what changes from run to run: durations, trace ids, column padding."""
    text = re.sub(r"\b[0-9a-f]{32}\b", "<trace id>", text)
    text = re.sub(r"\d+(\.\d+)? ?(µs|ms|s)\b", "<time>", text)
    return [" ".join(line.split()) for line in text.strip().splitlines()]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    outcome = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert outcome.failed == 0
    assert outcome.attempted > 0, f"{name} has no example that runs"


def test_the_docs_page_runs_and_prints_what_it_shows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = shutil.copytree(EXAMPLE, tmp_path / "example")
    monkeypatch.chdir(folder)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, "agent", raising=False)
    blocks = [
        (m.group(1), m.group(2)) for m in _FENCE.finditer((REPO / "docs" / "experiments.md").read_text())
    ]
    namespace: dict[str, object] = {}
    checked = 0
    for index, (language, code) in enumerate(blocks):
        if language != "python":
            continue
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(code, f"docs/experiments.md block {index}", "exec"), namespace)
        following = blocks[index + 1] if index + 1 < len(blocks) else ("", "")
        if following[0] == "console":
            assert normalized(printed.getvalue()) == normalized(following[1]), f"block {index}"
            checked += 1
    monkeypatch.delitem(sys.modules, "agent", raising=False)
    assert checked == 5


def test_the_example_keeps_a_baseline_and_compares_with_it(tmp_path: Path) -> None:
    def run() -> subprocess.CompletedProcess[str]:
        command = [sys.executable, str(EXAMPLE / "run.py")]
        return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)

    first = run()
    assert first.returncode == 0, first.stderr
    assert "no baseline yet: this run is now baseline.json" in first.stdout
    second = run()
    assert second.returncode == 0, second.stderr
    assert "cases: 0 regressed, 0 improved, 4 unchanged, 0 new, 0 missing" in second.stdout
    report = ExperimentReport.load(tmp_path / "run.json")
    assert [c.case_id for c in report.worst_first()] == [
        "everest",
        "turing-test",
        "curie-born",
        "curie-prizes",
    ]
    assert report.row("turing-test").score("levenshtein") == 0.6
    assert report.row("everest").error == "LookupError: no document about 'How high is Mount Everest?'"
    spans = load_spans(tmp_path / ".tracesim" / "traces.jsonl")
    retrieve = next(
        s for s in spans if s.name == "retrieve" and s.trace_id == report.row("curie-born").trace_id
    )
    agent = next(s for s in spans if s.span_id == retrieve.parent_span_id)
    assert agent.name == "answer"
    assert next(s for s in spans if s.span_id == agent.parent_span_id).name == "experiment answer"


def test_the_example_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("agent.py", "cases.jsonl"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    (tmp_path / "worse_agent.py").write_text(
        (EXAMPLE / "agent.py").read_text().replace("won two Nobel Prizes.", "won a Nobel Prize.")
    )
    argv = ["--dataset", "cases.jsonl", "--input", "question", "-e", "levenshtein:threshold=0.8"]
    argv += ["-e", "rouge:threshold=0.5", "--no-progress"]
    assert main(["run", "agent.py:answer", *argv, "--out", "baseline.json"]) == 0
    assert (
        main(["run", "worse_agent.py:answer", *argv, "--baseline", "baseline.json", "--tolerance", "0.02"])
        == 1
    )
    assert "regressed curie-prizes" in " ".join(capsys.readouterr().out.split())


def test_every_public_name_is_there_and_documented() -> None:
    import tracesim.experiments

    for name in tracesim.experiments.__all__:
        value = getattr(tracesim.experiments, name)
        assert value.__doc__, f"tracesim.experiments.{name} has no docstring"
    assert sorted(dir(tracesim.experiments)) == sorted(tracesim.experiments.__all__)
