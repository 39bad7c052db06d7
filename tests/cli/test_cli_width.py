"""Tables in CI logs: piped output cuts no name and splits no number, whatever ``COLUMNS`` says.

``tracesim report`` runs as a real process whose stdout is a pipe, as in CI, on a file whose
span and evaluator names are longer than an 80-column table has room for. On a terminal
(a pseudo-terminal of 100 columns) the tables fit its width instead, names folded onto more lines.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from report.tracefiles import TraceWriter, result

SPAN = "answer_the_customer_question_with_retrieval_and_citations"
EVALUATOR = "levenshtein_against_the_golden_answers_of_the_support_team"


@pytest.fixture
def long_names(tmp_path: Path) -> Path:
    w = TraceWriter(tmp_path / "traces.jsonl", service="support-bot-with-a-long-service-name")
    for i, passed in enumerate([True, False, False]):
        score = 0.9 if passed else 0.5
        root = w.span(
            SPAN, kind="AGENT", start_s=i, results=[result(EVALUATOR, score, passed=passed, threshold=0.8)]
        )
        w.span("calculator_tool_with_a_long_name", kind="TOOL", start_s=i, duration_s=0.01, parent=root)
    w.close()
    return w.path


def _report(path: Path, *args: str, columns: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACESIM_", "OTEL_")) and k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = columns
    return subprocess.run(
        [sys.executable, "-m", "tracesim", "report", str(path), *args],
        cwd=path.parent,
        env=env,
        capture_output=True,  # stdout is a pipe, as in CI
        text=True,
        timeout=120,
    )


def _rows(out: str) -> list[list[str]]:
    """The cells of every table row: a row split over two lines would show as two rows."""
    return [
        [cell.strip() for cell in line.split("│")[1:-1]] for line in out.splitlines() if line.startswith("│")
    ]


@pytest.mark.parametrize("columns", [None, "40"])
def test_piped_tables_keep_names_whole_and_rows_on_one_line(long_names: Path, columns: str | None) -> None:
    done = _report(
        long_names, "--group-by", "service.name", "--fail-under", f"{EVALUATOR}=0.8", columns=columns
    )
    assert done.returncode == 1, done.stderr  # 1 of 3 passed: the gate fails
    group = "support-bot-with-a-long-service-name"
    rows = _rows(done.stdout)
    assert [row[:4] for row in rows if row[1] == SPAN and row[2] == "AGENT"] == [[group, SPAN, "AGENT", "3"]]
    assert [row[:8] for row in rows if row[1] == EVALUATOR] == [
        [group, EVALUATOR, SPAN, "3", "0.633", "33.3%", "1", "2"]
    ]
    # two span rows, one evaluator row, one agent row, one tool row: no row wrapped onto a second line
    assert len(rows) == 5
    heads = [line for line in done.stdout.splitlines() if line.startswith("┃")]
    assert len(heads) == 4  # one header line per table (spans, evaluators, agents, tools): none wrapped
    assert "┃ pass rate ┃" in heads[1]
    assert "…" not in done.stdout
    gate = f"tracesim report: --fail-under {EVALUATOR}: pass rate 0.333 < 0.800 (1 of 3 passed): FAILED"
    assert gate in done.stderr.splitlines()


def test_piped_tables_are_the_same_whatever_columns_says(long_names: Path) -> None:
    default = _report(long_names, columns=None)
    assert default.returncode == 0, default.stderr
    assert len(default.stdout.splitlines()[0]) > 80  # the summary line is never wrapped either
    for columns in ("400", "wide"):  # wider than the tables, and a value that is no width
        assert _report(long_names, columns=columns).stdout == default.stdout


def test_show_prints_long_names_whole_into_a_pipe(long_names: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACESIM_", "OTEL_"))}
    done = subprocess.run(
        [sys.executable, "-m", "tracesim", "show", str(long_names), "--no-details", "--last", "1"],
        env={**env, "COLUMNS": "40"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].startswith(f"{SPAN}  AGENT  ")
    assert lines[2].startswith("└─ calculator_tool_with_a_long_name  TOOL  ")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_on_a_terminal_tables_fit_its_width(long_names: Path) -> None:
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))  # 30 rows, 100 columns
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACESIM_", "OTEL_")) and k != "COLUMNS"}
    process = subprocess.Popen(
        [sys.executable, "-m", "tracesim", "report", str(long_names)],
        env={**env, "TERM": "xterm-256color"},  # rich takes a "dumb" terminal to be 80 columns
        stdout=follower,
        stderr=subprocess.PIPE,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the process exited and closed its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert process.wait(timeout=120) == 0, process.stderr.read() if process.stderr else ""
    if process.stderr:
        process.stderr.close()
    text = re.sub(r"\x1b\[[0-9;]*m", "", b"".join(chunks).decode("utf-8"))  # the headers' bold and italics
    lines = text.replace("\r\n", "\n").splitlines()
    table = [line for line in lines if line[:1] in ("┏", "┃", "┡", "│", "└")]
    assert table
    assert max(len(line) for line in table) <= 100
    spans = _rows(
        "\n".join(lines[: lines.index(next(line for line in lines if line.startswith("Evaluators")))])
    )
    assert spans[0][1:6] == ["AGENT", "3", "0", "0.0%", "100.0 ms"]  # the numbers keep their width
    assert "".join(row[0] for row in spans).startswith(SPAN)  # the name folds onto more lines, whole
