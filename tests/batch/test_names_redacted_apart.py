"""Two evaluators whose names redact to the same text keep their own results (issue 23 review).

An evaluator may be named with a key (``sk-proj-...`` is a valid name). Redacted, two such names
read alike: the results' column names must stay apart, as `tracesim._outputs.distinct`
numbers them, or the part cannot be written (pyarrow refused the duplicate columns, the whole
run failed) and ``tracesim eval``'s results would hold one evaluator's results for two.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from tracesim.cli import main

FIRST, SECOND = "sk-proj-Abc123Def456Ghi789Jkl0", "sk-proj-Zyx987Wvu654Tsr321Qpo0"
SPECS = [{"type": "exact", "name": FIRST}, {"type": "jaccard", "name": SECOND}]


def _data(tmp_path: Path) -> Path:
    data = tmp_path / "data.jsonl"
    rows = [{"id": "1", "output": "a b", "expected": "a b c"}, {"id": "2", "output": "x", "expected": "x"}]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return data


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_batch_score_writes_both_evaluators_columns(tmp_path: Path, fmt: str) -> None:
    pytest.importorskip("pyarrow", reason="the 'dask' extra is not installed")
    import pyarrow.parquet as pq

    from tracesim import batch

    out = tmp_path / "out"
    report = batch.score(_data(tmp_path), evaluators=SPECS, output=out, engine="local", output_format=fmt)
    assert report.failed_parts == {}
    part = out / f"part-00000.{fmt}"
    if fmt == "parquet":
        rows = pq.read_table(part).to_pylist()
    else:
        rows = [json.loads(line) for line in part.read_text(encoding="utf-8").splitlines()]
    assert [row["[REDACTED:api_key].score"] for row in rows] == [0.0, 1.0]  # exact
    assert [row["[REDACTED:api_key]-2.score"] for row in rows] == [pytest.approx(2 / 3), 1.0]  # jaccard
    assert FIRST[8:] not in part.read_bytes().decode("utf-8", "replace")
    shown = io.StringIO()
    report.print_summary(Console(file=shown, width=200), errors=io.StringIO())
    assert "[REDACTED:api_key]-2" in shown.getvalue()  # the summary names them as the results do


def test_tracesim_eval_keeps_both_evaluators_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "scores.jsonl"
    specs = [f"exact:name={FIRST}", "-e", f"jaccard:name={SECOND}"]
    assert main(["eval", str(_data(tmp_path)), "-e", *specs, "-o", str(results), "--workers", "1"]) == 0
    table = capsys.readouterr().out
    lines = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    assert [sorted(line["results"]) for line in lines] == [["[REDACTED:api_key]", "[REDACTED:api_key]-2"]] * 2
    assert [line["results"]["[REDACTED:api_key]-2"]["score"] for line in lines] == [pytest.approx(2 / 3), 1.0]
    assert FIRST[8:] not in table
