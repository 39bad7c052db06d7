"""``tracesim eval`` end to end, as a user runs it."""

from __future__ import annotations

import csv
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tracesim.cli import main

REPO = Path(__file__).parents[2]
WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "a",
    "lazy",
    "dog",
    "Paris",
    "is",
    "capital",
    "of",
    "France",
    "café",
    "東京",
    "🍕",
]


def write_rows(path: Path, rows: int, seed: int = 7) -> set[int]:
    """A JSONL file with good rows, a few bad ones and some without expected output."""
    rng = random.Random(seed)
    bad_lines: set[int] = set()
    with path.open("w", encoding="utf-8") as handle:
        for number in range(1, rows + 1):
            kind = number % 400
            if kind == 13:
                handle.write('{"output": "unterminated\n')
            elif kind == 14:
                handle.write("[1, 2, 3]\n")
            elif kind == 15:
                handle.write(json.dumps({"expected": "no output here"}) + "\n")
            else:
                expected = " ".join(rng.choices(WORDS, k=rng.randint(0, 10)))
                output = expected if number % 3 == 0 else " ".join(rng.choices(WORDS, k=rng.randint(0, 10)))
                row = {
                    "id": f"r{number}",
                    "output": output,
                    "expected": None if number % 50 == 0 else expected,
                }
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
                continue
            bad_lines.add(number)
    return bad_lines


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "120"}
    return subprocess.run(
        [sys.executable, "-m", "tracesim", "eval", *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
        env=env,
        check=False,
    )


@pytest.mark.slow
def test_eval_end_to_end_with_workers_and_bad_rows(tmp_path: Path) -> None:
    data = tmp_path / "answers.jsonl"
    bad_lines = write_rows(data, 3000)
    done = run_cli(
        str(data),
        "-e",
        "levenshtein:threshold=0.8",
        "-e",
        "rouge:rouge_type=rougeL",
        "-e",
        "bleu",
        "-e",
        "meteor",
        "--workers",
        "2",
        "--fail-under",
        "levenshtein=0.2",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    out = tmp_path / "answers.scores.jsonl"
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [line["line"] for line in lines] == list(range(1, 3001))  # one line per row, in order
    bad = {line["line"] for line in lines if line.get("status") == "bad_row"}
    assert bad == bad_lines
    for number in sorted(bad_lines)[:3]:
        assert f"line {number}:" in done.stderr
    good = [line for line in lines if "results" in line]
    assert len(good) == 3000 - len(bad_lines)
    assert set(good[0]["results"]) == {"levenshtein", "rouge", "bleu", "meteor"}
    skipped = [line for line in good if line["results"]["levenshtein"]["status"] == "skipped"]
    assert len(skipped) == 60
    identical = next(line for line in good if line["line"] == 3)
    assert identical["results"]["levenshtein"]["score"] == 1.0
    assert identical["id"] == "r3"
    for heading in ("evaluator", "count", "mean", "pass rate", "skipped", "errors", "levenshtein", "meteor"):
        assert heading in done.stdout
    assert f"{len(bad_lines)} bad rows skipped" in done.stdout
    assert "tracesim eval: --fail-under levenshtein: pass rate " in done.stderr
    assert done.stderr.rstrip().endswith(": ok")


def test_fail_under_gate_exits_1(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(
        json.dumps({"output": "Paris", "expected": "Paris"})
        + "\n"
        + json.dumps({"output": "Lyon", "expected": "Paris"})
        + "\n",
        encoding="utf-8",
    )
    out = tmp_path / "o.jsonl"
    assert (
        main(["eval", str(data), "-e", "exact", "--fail-under", "exact=0.5", "-o", str(out), "--no-progress"])
        == 0
    )
    assert (
        main(
            ["eval", str(data), "-e", "exact", "--fail-under", "exact=0.51", "-o", str(out), "--no-progress"]
        )
        == 1
    )


def test_csv_with_custom_columns_and_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "d.csv"
    with data.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["question", "answer", "gold"])
        writer.writerow(["q1", "Hello World!", "Hello World"])
        writer.writerow(["q2", "multi\nline", "multi line"])
        writer.writerow(["q3"])  # too few fields: a bad row
    code = main(
        [
            "eval",
            str(data),
            "--output-col",
            "answer",
            "--expected-col",
            "gold",
            "--input-col",
            "question",
            "-e",
            "levenshtein",
            "-o",
            "-",
            "--no-progress",
        ]
    )
    assert code == 0
    captured = capsys.readouterr()
    lines = [json.loads(line) for line in captured.out.splitlines()]
    assert lines[0]["results"]["levenshtein"]["score"] == 0.92
    assert lines[1]["results"]["levenshtein"]["score"] == 0.9
    # what was scored is in the line, so a failing row is read where its score is
    assert [(x["input"], x["output"], x["expected"]) for x in lines[:2]] == [
        ("q1", "Hello World!", "Hello World"),
        ("q2", "multi\nline", "multi line"),
    ]
    assert lines[2] == {
        "line": 5,
        "status": "bad_row",
        "error": "no 'answer' value (the row has too few fields)",
    }
    assert "2 rows scored" in captured.err


def test_default_evaluators_and_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"output": "a b", "expected": "a b"}) + "\n", encoding="utf-8")
    assert main(["eval", str(data), "--no-progress"]) == 0
    line = json.loads((tmp_path / "d.scores.jsonl").read_text(encoding="utf-8"))
    assert set(line["results"]) == {"levenshtein", "f1", "rouge"}
    capsys.readouterr()
    assert main(["eval", "--list"]) == 0
    assert "meteor" in capsys.readouterr().out.split()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-e", "levenshtien"], "accepted: one of"),
        (["-e", "semantic:backend=cloud"], "semantic.backend"),
        (["-e", "levenshtein:threshold=high"], "levenshtein.threshold"),
        (["-e", "rouge", "-e", "rouge:rouge_type=rouge1"], "two evaluators are named 'rouge'"),
        (["-e", "levenshtein", "--fail-under", "levenshtein=2"], "between 0 and 1"),
        (["-e", "levenshtein", "--fail-under", "rouge=0.5"], "no evaluator named 'rouge'"),
        (["-e", "content_similarity", "--fail-under", "content_similarity=0.5"], "has no threshold"),
        (["--workers", "0"], "--workers"),
        (["--output-col", "answer"], "no 'answer' column"),
    ],
)
def test_usage_errors_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    data = tmp_path / "d.csv"
    data.write_text("output,expected\nParis,Paris\n", encoding="utf-8")
    assert main(["eval", str(data), "--no-progress", *args]) == 2
    assert message in capsys.readouterr().err


def test_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", str(tmp_path / "nope.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["eval"]) == 2


def _two_rows(tmp_path: Path) -> Path:
    data = tmp_path / "d.jsonl"
    rows = [{"output": "Paris", "expected": "Paris"}, {"output": "Lyon", "expected": "Paris"}]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return data


def test_gates_take_percentages_and_read_like_report_gates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _two_rows(tmp_path)
    args = ["eval", str(data), "-e", "exact", "-o", str(tmp_path / "o.jsonl"), "--no-progress"]
    assert main([*args, "--fail-under", "exact=50%"]) == 0
    assert (
        "tracesim eval: --fail-under exact: pass rate 0.500 >= 0.500 (1 of 2 passed): ok"
        in capsys.readouterr().err
    )
    assert main([*args, "--fail-under", "exact=0.51"]) == 1
    assert (
        "tracesim eval: --fail-under exact: pass rate 0.500 < 0.510 (1 of 2 passed): FAILED"
        in capsys.readouterr().err
    )


@pytest.mark.parametrize("spec", ["exact=x", "exact", "exact=150%", "=0.5"])
def test_a_malformed_gate_is_refused_with_the_words_report_uses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str
) -> None:
    from tracesim._report import parse_gate

    with pytest.raises(ValueError, match=r"EVALUATOR=RATE|not a number|between 0 and 1") as refused:
        parse_gate(spec)
    data = _two_rows(tmp_path)
    assert main(["eval", str(data), "-e", "exact", "--no-progress", "--fail-under", spec]) == 2
    assert f"tracesim eval: error: --fail-under: {refused.value}" in capsys.readouterr().err
    with pytest.raises(SystemExit) as report_exit:
        main(["report", str(data), "--fail-under", spec])
    assert report_exit.value.code == 2
    assert str(refused.value) in capsys.readouterr().err


@pytest.mark.parametrize("out", ["/proc/nope/x", "{tmp}", "{tmp}/missing-dir/o.jsonl"])
def test_an_unwritable_results_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], out: str
) -> None:
    data = _two_rows(tmp_path)
    target = out.format(tmp=tmp_path)
    assert main(["eval", str(data), "-e", "exact", "-o", target, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tracesim eval: error: cannot write {target}: ")
    assert "Traceback" not in err


def test_a_directory_or_an_unreadable_file_as_data_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", str(tmp_path), "-e", "exact", "--no-progress"]) == 2
    assert "is a directory" in capsys.readouterr().err
    if not Path("/proc/self/mem").is_file():
        pytest.skip("needs Linux /proc (a file that opens but cannot be read)")
    out = str(tmp_path / "o.jsonl")
    for fmt in ("jsonl", "csv"):
        assert (
            main(["eval", "/proc/self/mem", "--format", fmt, "-e", "exact", "-o", out, "--no-progress"]) == 2
        )
        assert "tracesim eval: error: cannot read /proc/self/mem: " in capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "content", "code", "message"),
    [
        ("empty.jsonl", b"", 0, "0 rows scored"),
        ("blank.jsonl", b"\n  \n", 0, "0 rows scored"),
        ("empty.csv", b"", 2, "no 'output' column (columns: none)"),
        ("nul.csv", b"output,expected\nPar\x00is,Paris\nParis,Paris\n", 0, "2 rows scored"),
        ("nul-header.csv", b"out\x00put,expected\nParis,Paris\n", 2, "(columns: out\u2400put, expected)"),
        ("bad-utf8-header.csv", b"output,exp\xffected\nParis,Paris\n", 2, "header is not valid UTF-8"),
        (
            "bad-utf8-row.csv",
            b"output,expected\nPar\xffis,Paris\nParis,Paris\n",
            0,
            "line 2: not valid UTF-8",
        ),
        (
            "escape-header.csv",
            b"\x1b]0;pwned\x07,expected\nParis,Paris\n",
            2,
            "(columns: \u241b]0;pwned\u2407",
        ),
    ],
)
def test_odd_data_files_end_in_a_message_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: bytes, code: int, message: str
) -> None:
    data = tmp_path / name
    data.write_bytes(content)
    assert main(["eval", str(data), "-e", "exact", "-o", str(tmp_path / "o.jsonl"), "--no-progress"]) == code
    captured = capsys.readouterr()
    assert message in captured.out + captured.err
    assert "\x1b" not in captured.out + captured.err


def test_a_file_where_no_row_can_be_scored_exits_2_naming_the_fields_it_has(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "answers.jsonl"
    data.write_text('{"answer": "Paris", "golden": "Paris"}\n{"answer": "Lyon", "golden": "Paris"}\n')
    assert main(["eval", str(data), "-e", "exact", "--no-progress"]) == 2
    captured = capsys.readouterr()
    said = captured.out + captured.err
    assert "no row could be scored: all 2 were bad" in said
    assert "no 'output' field (fields: 'answer', 'golden')" in said
    assert "--output-col" in said
    # the columns named: scored, and the exit status is the gate's
    assert main(["eval", str(data), "-e", "exact", "--output-col", "answer", "--expected-col", "golden"]) == 0
