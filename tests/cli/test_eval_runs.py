"""``tracesim eval`` and `tracesim.batch` over data files with ``tool_calls`` and
``expected_tool_calls`` columns: run evaluators score the calls, string evaluators the output.

The same rows are written as JSONL, CSV and Parquet (a list of structs, as a dataframe of tool
calls is saved); every engine gives each row the same scores and details, a cell that is not a
list of tool calls is a bad row naming the column and the item, and nothing the rows hold
leaves unredacted.
"""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

import tracesim
from tracesim.cli import main

EVALUATORS = [
    "trajectory_match",
    'tool_correctness:params=["input_parameters"]',
    "run_budget:max_tool_calls=1",
    "exact",
]
NAMES = ["trajectory_match", "tool_correctness", "run_budget", "exact"]
WARSAW = {"name": "lookup", "arguments": {"city": "Warsaw"}}
CONVERT = {"name": "convert", "arguments": "12 C to F"}  # arguments that are not JSON: compared as text
OSLO = [{"name": "lookup", "arguments": {"city": "Oslo"}}, {"name": "convert", "arguments": {}}]
ROWS: list[dict[str, Any]] = [
    {
        "id": "a",
        "output": "12 C",
        "expected": "12 C",
        "tool_calls": [WARSAW, CONVERT],
        "expected_tool_calls": [WARSAW, CONVERT],
    },
    {
        "id": "b",
        "output": "15 C",
        "expected": "3 C",
        # JSON text, its arguments JSON text too
        "tool_calls": '[{"name": "lookup", "arguments": "{\\"city\\": \\"Paris\\"}"}]',
        "expected_tool_calls": json.dumps(OSLO),
    },
    {
        "id": "c",
        "output": "x",
        "expected": "x",
        "tool_calls": '[{"name": "lookup"}, "convert"]',
        "expected_tool_calls": "[]",
    },
    {
        "id": "d",
        "output": "x",
        "expected": "x",
        "tool_calls": "[]",
        "expected_tool_calls": '{"name": "lookup"}',
    },
    {"id": "e", "output": "x", "expected": "x", "tool_calls": None, "expected_tool_calls": "[]"},
    {"id": "f", "output": "x", "expected": "x", "tool_calls": "lookup(Warsaw)", "expected_tool_calls": "[]"},
]
BAD = {
    "c": "bad 'tool_calls' cell (tool_calls[1]: got 'convert'; accepted: a tool call: "
    '{"name": ..., "arguments": {...}})',
    "d": "bad 'expected_tool_calls' cell (expected_tool_calls: got {'name': 'lookup'}; accepted: a list of "
    'tool calls: [{"name": ..., "arguments": {...}}, ...])',
    "f": "bad 'tool_calls' cell (tool_calls: got 'lookup(Warsaw)'; accepted: a JSON list of tool calls)",
}
NO_CALLS = "no tool calls: the 'tool_calls' cell is empty"


def write_jsonl(path: Path) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in ROWS), encoding="utf-8")
    return path


def write_csv(path: Path) -> Path:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, ["id", "output", "expected", "tool_calls", "expected_tool_calls"])
        writer.writeheader()
        for row in ROWS:
            cells = {
                key: json.dumps(value) if isinstance(value, list) else value for key, value in row.items()
            }
            writer.writerow(cells)
    return path


def eval_lines(data: Path, capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, dict[str, Any]], str, str]:
    """``tracesim eval``'s results by row id (bad rows by their line's id), its stdout and stderr."""
    out = data.with_name(data.stem + ".scores.jsonl")
    assert (
        main(["eval", str(data), "--workers", "1", "--no-progress", *(f"-e{spec}" for spec in EVALUATORS)])
        == 0
    )
    printed = capsys.readouterr()
    ids = {number: row["id"] for number, row in enumerate(ROWS, 2 if data.suffix == ".csv" else 1)}
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    return {ids[line["line"]]: line for line in lines}, printed.out, printed.err


def parquet_calls(value: Any) -> list[dict[str, str]] | None:
    """A row's tool calls as Parquet structs of text, or None for a cell that is not a list of them."""
    try:
        calls = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return None
    if not isinstance(calls, list) or not all(isinstance(call, dict) for call in calls):
        return None
    arguments = [call["arguments"] for call in calls]
    return [
        {"name": call["name"], "arguments": text if isinstance(text, str) else json.dumps(text)}
        for call, text in zip(calls, arguments, strict=True)
    ]


def check_scores(lines: dict[str, dict[str, Any]]) -> None:
    """The rows' results, whichever file format they came from."""
    scores = {
        row_id: [line["results"][name]["score"] for name in NAMES]
        for row_id, line in lines.items()
        if "results" in line
    }
    assert scores == {"a": [1.0, 1.0, 0.0, 1.0], "b": [0.0, 0.0, 1.0, 0.0], "e": [None, None, None, 1.0]}
    a, b, e = lines["a"]["results"], lines["b"]["results"], lines["e"]["results"]
    assert a["trajectory_match"]["details"]["arguments_as_text"] == ["convert"]
    assert a["run_budget"]["details"]["exceeded"] == {"max_tool_calls": {"limit": 1, "actual": 2, "over": 1}}
    assert b["tool_correctness"]["details"]["missing"] == OSLO
    assert b["tool_correctness"]["details"]["extra"] == [{"name": "lookup", "arguments": {"city": "Paris"}}]
    assert b["trajectory_match"]["details"]["messages"] == {"actual": 1, "expected": 2}
    assert [e[name]["explanation"] for name in NAMES[:3]] == [NO_CALLS] * 3
    assert lines["b"]["tool_calls"] == [{"name": "lookup", "arguments": {"city": "Paris"}}]
    assert lines["b"]["expected_tool_calls"] == OSLO
    assert {row_id: line["error"] for row_id, line in lines.items() if "results" not in line} == BAD


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_eval_scores_the_tool_call_columns_with_run_evaluators(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    data = write_jsonl(tmp_path / "runs.jsonl") if fmt == "jsonl" else write_csv(tmp_path / "runs.csv")
    lines, out, err = eval_lines(data, capsys)
    check_scores(lines)
    first = 1 if fmt == "jsonl" else 2
    # the summary names the failed runs and how each differs
    assert f"runs.{fmt}:{first}: run_budget failed: exceeded " in out
    missing = 'missing lookup({"city":"Oslo"})'
    assert f"runs.{fmt}:{first + 1}: tool_correctness failed: {missing}" in out
    assert f"tracesim eval: line {first + 2}: {BAD['c']}; row skipped" in err


def test_batch_gives_jsonl_csv_and_parquet_rows_the_scores_of_eval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pd = pytest.importorskip("pandas", reason="the 'dask' extra is not installed")
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from tracesim.batch import score

    expected, _, _ = eval_lines(write_jsonl(tmp_path / "runs.jsonl"), capsys)
    write_csv(tmp_path / "runs.csv")
    # Parquet: tool calls as a list of structs (arguments as text), expected calls as JSON text; the
    # rows whose tool calls are not a list (their bad cells are read in JSONL and CSV) as null
    table = pa.table(
        {
            "id": [row["id"] for row in ROWS],
            "output": [row["output"] for row in ROWS],
            "tool_calls": [parquet_calls(row["tool_calls"]) for row in ROWS],
            "expected_tool_calls": [
                value if value is None or isinstance(value, str) else json.dumps(value)
                for value in (row["expected_tool_calls"] for row in ROWS)
            ],
        }
    )
    pq.write_table(table, tmp_path / "runs.parquet")
    for fmt in ("jsonl", "csv", "parquet"):
        report = score(
            str(tmp_path / f"runs.{fmt}"),
            evaluators=EVALUATORS,
            output=tmp_path / f"out-{fmt}",
            engine="local",
            output_format="jsonl",
        )
        frame = pd.concat(
            [
                pd.read_json(part, lines=True, dtype=False)
                for part in sorted((tmp_path / f"out-{fmt}").glob("part-*"))
            ]
        )
        rows = {row["id"]: row for row in frame.astype(object).where(frame.notna(), None).to_dict("records")}
        bad = {"bad 'expected_tool_calls' cell": 1} | (
            {} if fmt == "parquet" else {"bad 'tool_calls' cell": 2}
        )
        assert report.bad_rows == bad
        for row_id, line in expected.items():
            if "results" not in line:
                continue
            for name in NAMES[:3]:
                assert rows[row_id][f"{name}.score"] == line["results"][name]["score"], (fmt, row_id, name)
                details = rows[row_id][f"{name}.details"]
                assert (json.loads(details) if details else {}) == line["results"][name]["details"], (
                    fmt,
                    row_id,
                )
        assert json.loads(rows["b"]["expected_tool_calls"]) == OSLO


def test_tool_calls_are_redacted_in_the_results_and_the_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tracesim.configure(
        exporters=["jsonl"],
        jsonl_path=str(tmp_path / "t.jsonl"),
        redact=lambda text, attribute: text.replace("PRJ-4411", "[ticket]"),
    )
    try:
        row = {
            "id": "t",
            "output": "done",
            "tool_calls": [{"name": "open_ticket", "arguments": {"ticket": "PRJ-4411"}}],
            "expected_tool_calls": [{"name": "close_ticket", "arguments": {"ticket": "PRJ-4411"}}],
        }
        data = tmp_path / "tickets.jsonl"
        data.write_text(json.dumps(row) + "\n", encoding="utf-8")
        assert main(["eval", str(data), "--workers", "1", "--no-progress", "-e", "tool_correctness"]) == 0
        out = capsys.readouterr().out
        results = (tmp_path / "tickets.scores.jsonl").read_text(encoding="utf-8")
        written = ""
        if importlib.util.find_spec("pandas") is not None:  # batch: the Parquet cells too
            from tracesim.batch import score

            score(str(data), evaluators=["tool_correctness"], output=tmp_path / "out", engine="local")
            batch_out = capsys.readouterr().out
            import pyarrow.parquet as pq

            table = pq.read_table(tmp_path / "out" / "part-00000.parquet").to_pylist()
            written = json.dumps(table) + batch_out
            assert '"[ticket]"' in table[0]["tool_correctness.details"]
            assert '"[ticket]"' in table[0]["tool_calls"]
    finally:
        tracesim.shutdown()
    assert "tool_correctness failed: missing" in out
    assert '"[ticket]"' in out
    assert '"[ticket]"' in results
    assert "4411" not in out + results + written


def test_score_frame_reads_the_tool_call_columns_and_reports_a_bad_cell_in_the_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pd = pytest.importorskip("pandas", reason="the 'dask' extra is not installed")
    from tracesim.batch import score_frame

    expected, _, _ = eval_lines(write_jsonl(tmp_path / "runs.jsonl"), capsys)
    scores = score_frame(pd.DataFrame(ROWS), EVALUATORS)
    rows = {row["id"]: row for row in scores.astype(object).where(scores.notna(), None).to_dict("records")}
    for row_id in ("a", "b", "e"):
        for name in NAMES:
            assert rows[row_id][f"{name}.score"] == expected[row_id]["results"][name]["score"], (row_id, name)
    assert json.loads(rows["b"]["tool_correctness.details"])["missing"] == OSLO
    assert "exact.details" not in scores.columns
    # a frame has no bad rows: the run evaluators' results say what is wrong, the others score
    for row_id in BAD:
        assert [rows[row_id][f"{name}.status"] for name in NAMES] == ["error", "error", "error", "ok"]
        assert rows[row_id]["tool_correctness.error"] == f"bad_run: {BAD[row_id]}"


@pytest.mark.parametrize("engine", ["local", "dask"])
def test_the_tool_call_columns_can_have_other_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    if engine == "dask":
        pytest.importorskip("distributed", reason="the 'dask' extra is not installed")
    data = tmp_path / "renamed.jsonl"
    row = {"id": "a", "output": "12 C", "calls": [WARSAW], "wanted": [WARSAW, CONVERT]}
    data.write_text(json.dumps(row) + "\n", encoding="utf-8")
    out = tmp_path / ("out" if engine == "dask" else "out.jsonl")
    args = [
        "eval",
        str(data),
        "-e",
        "tool_correctness:threshold=0.9",
        "--no-progress",
        "--workers",
        "1",
        "-o",
        str(out),
    ]
    args += ["--tool-calls-col", "calls", "--expected-tool-calls-col", "wanted", "--engine", engine]
    if engine == "dask":
        args += ["--out-format", "jsonl"]
    assert main(args) == 0
    assert 'renamed.jsonl:1: tool_correctness failed: missing convert("12 C to F")' in capsys.readouterr().out
    if engine == "dask":
        line = json.loads((out / "part-00000.jsonl").read_text(encoding="utf-8"))
        details = json.loads(line["tool_correctness.details"])
    else:
        line = json.loads(out.read_text(encoding="utf-8"))
        details = line["results"]["tool_correctness"]["details"]
    assert details["missing"] == [CONVERT]
    assert details["matched"] == [[0, 0, 1.0]]


def test_golden_is_for_trace_files_on_dask(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write_jsonl(tmp_path / "runs.jsonl")
    assert main(["eval", str(data), "-e", "exact", "--golden", str(data)]) == 2
    assert "--golden needs --engine dask" in capsys.readouterr().err
    assert main(["eval", str(data), "-e", "exact", "--engine", "dask", "--golden", str(data)]) == 2
    assert "--span, --kind and --golden are for trace files: add --format traces" in capsys.readouterr().err
