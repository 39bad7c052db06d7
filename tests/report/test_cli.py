"""``tracesim report``: output, exit codes and file selection."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tracesim.cli import main

from .tracefiles import TraceWriter, result, write_known


def test_tables(known_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(known_file)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        "9 spans in 4 traces from 1 file (2026-09-21T14:13:20Z to 2026-09-21T14:13:50.400000Z); "
    )
    assert "8 evaluation results, 3 of them on 3 carrier spans." in out
    assert (
        "│ answer   │ AGENT     │     4 │      1 │      25.0% │ 250.0 ms │ 385.0 ms │ 397.0 ms │ 400.0 ms │"
        in out
    )
    assert (
        "│ search   │ TOOL      │     1 │      1 │     100.0% │  20.0 ms │  20.0 ms │  20.0 ms │  20.0 ms │"
        in out
    )
    lev = next(line for line in out.splitlines() if "levenshtein" in line)
    assert [c.strip() for c in lev.split("│")[1:-1]] == [
        "levenshtein", "answer", "4", "0.783", "66.7%", "2", "1", "1", "0", "0", "1", "pass 2, fail 1",
    ]  # fmt: skip
    rouge = next(line for line in out.splitlines() if "rouge" in line)
    assert [c.strip() for c in rouge.split("│")[1:-1]][2:10] == ["2", "0.600", "–", "0", "0", "0", "1", "2"]


def test_group_by_adds_a_column(known_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(known_file), "--group-by", "user.id"]) == 0
    out = capsys.readouterr().out
    assert "┃ user.id ┃ span " in out
    assert "│ bob     │ answer   │ AGENT     │     2 │      1 │      50.0% │" in out
    assert "│ alice   │ search   │ TOOL      │     1 │      1 │     100.0% │" in out  # inherited from answer


def test_json_document(known_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(known_file), "--json", "--fail-under", "levenshtein=0.5"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert list(doc) == [
        "schema", "files", "group_by", "totals", "spans", "evaluators", "evaluator_totals", "warnings",
        "llm_usage", "worst_cases", "error_types", "timeline", "agents", "gates",
    ]  # fmt: skip
    assert doc["timeline"] is None  # the spans started within 30 s
    assert doc["llm_usage"] is None  # no span reports token usage
    assert doc["schema"] == "tracesim.report/1"
    assert doc["files"] == [str(known_file)]
    assert doc["group_by"] is None
    assert doc["totals"] == {
        "files": 1, "spans": 9, "traces": 4, "errors": 2, "evaluator_spans": 3, "results": 8,
        "duplicate_spans": 0, "unresolved_links": 0, "export_dropped": 0,
        "start": "2026-09-21T14:13:20Z", "end": "2026-09-21T14:13:50.400000Z",
        "status": {"ok": 0, "unset": 7, "error": 2},
        "scoring": {"dropped": 0, "deferred": 0, "not_sampled": 2},
    }  # fmt: skip
    answer = doc["spans"][0]
    assert list(answer) == [
        "group", "name", "kinds", "count", "errors", "error_rate", "latency_s", "status", "scoring",
    ]  # fmt: skip
    assert answer["kinds"] == ["AGENT"]
    assert list(answer["latency_s"]) == ["min", "mean", "p50", "p95", "p99", "max"]
    lev = next(e for e in doc["evaluators"] if e["name"] == "levenshtein")
    assert list(lev) == [
        "group", "name", "span", "results", "ok", "skipped", "errors", "not_sampled", "from_carriers",
        "scored", "mean_score", "passed", "failed", "pass_rate", "thresholds", "labels", "histogram",
        "deferred", "deferred_missing",
    ]  # fmt: skip
    assert lev["histogram"]["counts"] == [0, 0, 0, 0, 0, 1, 0, 0, 0, 2]
    assert lev["histogram"]["passed"] == [0, 0, 0, 0, 0, 0, 0, 0, 0, 2]  # 0.9, and 0.95 on a carrier
    assert lev["histogram"]["failed"] == [0, 0, 0, 0, 0, 1, 0, 0, 0, 0]
    assert len(lev["histogram"]["edges"]) == 11
    assert lev["thresholds"] == [0.8]
    rouge = next(e for e in doc["evaluator_totals"] if e["name"] == "rouge")
    assert (rouge["span"], rouge["pass_rate"], rouge["not_sampled"]) == (None, None, 2)
    assert doc["gates"] == [
        {
            "evaluator": "levenshtein",
            "min_rate": 0.5,
            "pass_rate": 2 / 3,
            "passed": 2,
            "decided": 3,
            "outcome": "pass",
        }
    ]


@pytest.mark.parametrize(
    ("gates", "status", "message"),
    [
        (["levenshtein=0.6"], 0, "levenshtein: pass rate 0.667 >= 0.600 (2 of 3 passed): ok"),
        (["levenshtein=66%"], 0, "pass rate 0.667 >= 0.660"),
        (["levenshtein=0.7"], 1, "levenshtein: pass rate 0.667 < 0.700 (2 of 3 passed): FAILED"),
        (["levenshtein=0.5", "levenshtein=1"], 1, "< 1.000"),
        (["rouge=0.1"], 1, "rouge: no result with a pass/fail decision to check >= 0.100: FAILED"),
        (["levenshtien=0.5"], 2, "not in the files (found: human, levenshtein, rouge)"),
        (["levenshtien=0.5", "levenshtein=0.9"], 2, "levenshtien: no results or unsampled spans"),
    ],
)
def test_fail_under_exit_status(
    known_file: Path, capsys: pytest.CaptureFixture[str], gates: list[str], status: int, message: str
) -> None:
    args = ["report", str(known_file)]
    for gate in gates:
        args += ["--fail-under", gate]
    assert main(args) == status
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "spec", ["levenshtein", "levenshtein=", "=0.5", "levenshtein=high", "levenshtein=1.5"]
)
def test_malformed_fail_under_is_a_usage_error(
    known_file: Path, capsys: pytest.CaptureFixture[str], spec: str
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["report", str(known_file), "--fail-under", spec])
    assert exc.value.code == 2
    assert "argument --fail-under" in capsys.readouterr().err


def test_missing_file_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path / "nope.jsonl")]) == 2
    assert "error: no such file: " in capsys.readouterr().err


def test_no_default_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["report"]) == 2
    assert "no such file: .tracesim/traces.jsonl; name the files to read" in capsys.readouterr().err


def test_default_file_with_rotations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    w = TraceWriter(tmp_path / ".tracesim" / "traces.jsonl", max_bytes=4000, backups=20)
    write_known(w)
    w.close()
    rotated = sorted((tmp_path / ".tracesim").glob("traces.*.jsonl"))
    assert len(rotated) >= 2
    (tmp_path / ".tracesim" / "notes.jsonl").write_text("")  # not a rotation: not read

    assert main(["report", "--json"]) == 0

    doc = json.loads(capsys.readouterr().out)
    assert doc["files"][-1] == str(Path(".tracesim/traces.jsonl"))
    assert doc["files"][0].endswith(f"traces.{len(rotated)}.jsonl")  # oldest first
    assert len(doc["files"]) == len(rotated) + 1
    assert (doc["totals"]["spans"], doc["totals"]["results"]) == (9, 8)


def test_directory_and_repeated_files(
    writer: Callable[..., TraceWriter], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = writer("a.jsonl"), writer("b.jsonl")
    a.span("x")
    b.span("y")
    a.close()
    b.close()
    assert main(["report", "--json", str(a.path.parent), str(a.path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [Path(f).name for f in doc["files"]] == ["a.jsonl", "b.jsonl"]
    assert [s["name"] for s in doc["spans"]] == ["x", "y"]


def test_torn_last_line_warns_and_reports(known_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with known_file.open("ab") as f:
        f.write(b'{"resourceSpans": [')
    assert main(["report", str(known_file)]) == 0
    captured = capsys.readouterr()
    assert "warning: " in captured.err
    assert "torn last line" in captured.err
    assert "9 spans in 4 traces" in captured.out


def test_empty_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "traces.jsonl"
    empty.touch()
    assert main(["report", str(empty)]) == 0
    assert capsys.readouterr().out == "No spans found.\n"
    assert main(["report", str(empty), "--fail-under", "judge=0.5"]) == 2


def test_html_is_written(known_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report.html"
    assert main(["report", str(known_file), "--json", "--html", str(out)]) == 0
    captured = capsys.readouterr()
    json.loads(captured.out)  # stdout stays pure JSON
    assert f"wrote {out}" in captured.err
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert main(["report", str(known_file), "--html", str(tmp_path / "missing" / "r.html")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_console_entry_point(writer: Callable[..., TraceWriter], tmp_path: Path) -> None:
    w = writer()
    w.span("answer", results=[result("judge", 0.2, passed=False, threshold=0.5)])
    w.close()
    proc = subprocess.run(
        [sys.executable, "-m", "tracesim", "report", str(w.path), "--fail-under", "judge=0.5"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 1, proc.stderr
    assert "judge: pass rate 0.000 < 0.500 (0 of 1 passed): FAILED" in proc.stderr
    assert "1 span in 1 trace from 1 file (" in proc.stdout


def test_markup_in_names_is_printed_literally(
    writer: Callable[..., TraceWriter], capsys: pytest.CaptureFixture[str]
) -> None:
    w = writer()
    w.span("[bold]answer[/bold]", attributes={"team": "[red]x"}, results=[result("[i]judge", 0.5)])
    w.close()
    assert main(["report", str(w.path), "--group-by", "team"]) == 0
    out = capsys.readouterr().out
    for literal in ("[bold]answer[/bold]", "[red]x", "[i]judge"):
        assert literal in out
