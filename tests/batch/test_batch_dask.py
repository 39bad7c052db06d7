"""`tracesim.batch.score` on a real Dask ``LocalCluster`` of two worker processes."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from batchdata import EVALUATORS, NAMES, Stall, traced_file, write_csv, write_jsonl

pd = pytest.importorskip("pandas", reason="the 'dask' extra is not installed")
distributed = pytest.importorskip("distributed", reason="the 'dask' extra is not installed")

from tracesim.batch import Records, Spans, build_evaluators, score, score_frame  # noqa: E402
from tracesim.cli import main  # noqa: E402
from tracesim.evaluators import Levenshtein  # noqa: E402


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """Two single-threaded worker processes, shared by the module (each costs seconds to start)."""
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=":0",  # any free port: None still binds 8787 (distributed 2026.x)
        env={"TRACESIM_INTERNAL_ERRORS": "raise"},  # workers start before the autouse fixture sets it
    )
    with cluster, distributed.Client(cluster) as dask_client:
        dask_client.run(build_evaluators, EVALUATORS)  # import the metrics once, before any test
        yield dask_client


def parts(directory: Path) -> Any:
    """Every results part of a run, in row order (the parts are read as a user reads them)."""
    files = sorted(directory.glob("part-*"))
    if files[0].suffix == ".jsonl":
        frame = pd.DataFrame(
            [json.loads(line) for f in files for line in f.read_text(encoding="utf-8").splitlines()]
        )
    else:
        frame = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    frame = frame.sort_values(["source", "row"], kind="stable").reset_index(drop=True)
    return frame.astype(object).where(frame.notna(), None)  # a missing value as None, whatever the dtype


def local_eval(data: Path, *extra: str) -> dict[int, dict[str, Any]]:
    """``tracesim eval``'s local results (one process), by line number."""
    out = data.with_name("local.jsonl")
    args = ["eval", str(data), "--workers", "1", "--no-progress", "-o", str(out), *extra]
    assert main([*args, *(arg for spec in EVALUATORS for arg in ("-e", spec))]) == 0
    return {line["line"]: line for line in map(json.loads, out.read_text(encoding="utf-8").splitlines())}


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_dask_gives_every_row_the_scores_of_the_local_path(client: Any, tmp_path: Path, fmt: str) -> None:
    data = tmp_path / f"answers.{fmt}"
    write_jsonl(data, 600) if fmt == "jsonl" else write_csv(data, 400)
    local = local_eval(data)
    report = score(
        Records(str(data), block_bytes=2000), evaluators=EVALUATORS, output=tmp_path / "out", client=client
    )
    assert report.parts > 4
    assert not report.failed_parts
    results = parts(tmp_path / "out")
    assert results["row"].tolist() == sorted(local)  # every row, once, bad rows included
    compared = 0
    for row in results.to_dict("records"):
        line = local[row["row"]]
        if "results" not in line:
            assert line["status"] == "bad_row"
            assert row["bad_row"] == line["error"]
            continue
        assert row["bad_row"] is None
        assert row["id"] == (None if line.get("id") is None else str(line["id"]))
        for name in NAMES:
            mine, theirs = (
                line["results"][name],
                {f: row[f"{name}.{f}"] for f in ("score", "passed", "status")},
            )
            assert theirs["status"] == mine["status"]
            assert theirs["score"] == mine["score"]  # exactly
            assert theirs["passed"] == mine["passed"]
            compared += 1
    assert compared > len(NAMES) * 350
    assert report.records == len(local)
    assert sum(report.bad_rows.values()) == sum("results" not in line for line in local.values())


def test_a_parquet_source_scores_as_score_frame_does_in_process(client: Any, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    write_jsonl(tmp_path / "rows.jsonl", 500)
    rows = [
        json.loads(line)
        for line in (tmp_path / "rows.jsonl").read_text(encoding="utf-8").splitlines()
        if line.startswith("{") and '"output"' in line and line.endswith("}")
    ]
    for row in rows:
        row["id"] = str(row["id"])
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "rows.parquet", row_group_size=120)
    report = score(
        Records(str(tmp_path / "rows.parquet"), parquet_rows=50),
        evaluators=EVALUATORS,
        output=tmp_path / "out.jsonl",
        client=client,
    )
    assert report.parts == 12  # row groups of 120, 120, 120 and 116 rows, in parts of 50
    assert report.records == len(rows) == 476
    assert not report.bad_rows
    results = parts(tmp_path / "out.jsonl")
    expected = score_frame(pd.read_parquet(tmp_path / "rows.parquet"), EVALUATORS)
    assert results["id"].tolist() == expected["id"].tolist()
    from tracesim.batch._partition import value_text

    # what was scored sits beside its scores, as text
    assert results["output"].tolist() == [r["output"] for r in rows]
    assert results["expected"].tolist() == [value_text(r.get("expected")) for r in rows]
    for column in expected.columns[1:]:
        theirs = [None if pd.isna(v) else v for v in expected[column].tolist()]
        assert results[column].tolist() == theirs, column


def test_a_trace_file_source_scores_the_selected_spans_and_keeps_their_ids(
    client: Any, tmp_path: Path
) -> None:
    path = traced_file(tmp_path)
    report = score(
        Spans(str(path), name="answer", kind="agent"),
        evaluators=["levenshtein"],
        output=tmp_path / "out",
        client=client,
    )
    assert report.records == 5
    assert report.scored == 2
    assert dict(report.bad_rows) == {"a value was cut when traced": 1, "invalid JSON": 1, "not OTLP/JSON": 1}
    results = parts(tmp_path / "out")
    good = results[results["bad_row"].isna()]
    assert good["span_name"].tolist() == ["answer", "answer"]
    assert all(len(t) == 32 for t in good["trace_id"])
    assert all(len(s) == 16 for s in good["span_id"])
    assert good["levenshtein.score"].tolist()[0] == Levenshtein().evaluate("Warsaw", "Warsaw").score
    assert good["levenshtein.status"].tolist() == ["ok", "skipped"]


def test_a_worker_killed_mid_run_still_leaves_every_row_once(client: Any, tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    write_jsonl(data, 400)
    lines = data.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[59] = json.dumps({"id": "stall", "output": "STALL", "expected": "STALL"}) + "\n"
    data.write_text("".join(lines), encoding="utf-8")
    evaluators = [*EVALUATORS, Stall()]
    with ThreadPoolExecutor(1) as pool:
        run = pool.submit(
            score,
            Records(str(data), block_bytes=1500),
            evaluators=evaluators,
            output=tmp_path / "out",
            client=client,
        )
        pid = distributed.Variable("tracesim-stalled-pid", client=client).get(timeout=120)
        assert pid in client.run(os.getpid).values()
        os.kill(pid, signal.SIGKILL)  # the worker process scoring the stalled part dies
        distributed.Event("tracesim-release", client=client).set()
        report = run.result(timeout=300)
    assert pid not in client.run(os.getpid).values()
    assert not report.failed_parts
    results = parts(tmp_path / "out")
    rows = [number for number, line in enumerate(lines, start=1) if line.strip()]  # blank lines are no rows
    assert results["row"].tolist() == rows  # every row once: none lost, none twice
    assert report.records == len(rows) == 396
    stalled = results[results["id"] == "stall"]
    assert stalled["stall.score"].tolist() == [1.0]
    assert not list((tmp_path / "out").glob("*.tmp"))


def test_the_cli_scores_on_the_cluster_at_the_address_it_is_given(
    client: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "answers.jsonl"
    bad = write_jsonl(data, 300)
    args = [
        "eval",
        str(data),
        "--engine",
        "dask",
        "-e",
        "exact",
        "-e",
        "levenshtein:threshold=0.8",
        "--no-progress",
    ]
    gate = ["--fail-under", "exact=0.2"]
    assert main([*args, "--scheduler", client.scheduler.address, *gate]) == 0
    captured = capsys.readouterr()
    assert f"{300 - len(bad) - 3} rows scored" in captured.out  # three lines are blank
    assert f"{len(bad)} bad rows skipped (invalid JSON: " in captured.out
    assert "tracesim eval: --fail-under exact: pass rate " in captured.err
    assert f"{data}:11: invalid JSON" in captured.err
    results = parts(tmp_path / "answers.scores")
    assert len(results) == 297
    # a second run finds the results of the first and leaves them alone
    monkeypatch.setenv("TRACESIM_DASK_ADDRESS", client.scheduler.address)
    assert main(args) == 2
    assert "already holds results" in capsys.readouterr().err
    assert main([*args, "--overwrite", "--out-format", "jsonl", *gate[:1], "exact=0.99"]) == 1
    assert "FAILED" in capsys.readouterr().err
    assert len(parts(tmp_path / "answers.scores")) == 297  # replaced, not added to


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "parquet"], "--format parquet needs --engine dask"),
        (["--scheduler", "tcp://127.0.0.1:1"], "--scheduler needs --engine dask"),
        (["--engine", "dask", "--span", "answer"], "add --format traces"),
        (["--engine", "dask", "--scheduler", "tcp://127.0.0.1:1", "--workers", "2"], "has its own workers"),
        (["--engine", "dask", "--format", "traces", "--kind", "robot"], "kind"),
    ],
)
def test_cli_usage_errors_come_before_any_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"output": "a", "expected": "a"}\n', encoding="utf-8")
    assert main(["eval", str(data), "-e", "exact", "--no-progress", *args]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "d.scores").exists()


def test_cli_refuses_a_missing_source_and_a_glob_without_a_results_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", str(tmp_path / "nope.jsonl"), "--engine", "dask", "-e", "exact"]) == 2
    assert "nope.jsonl: no such file" in capsys.readouterr().err
    assert main(["eval", str(tmp_path / "*.jsonl"), "--engine", "dask", "-e", "exact"]) == 2
    assert "give the results directory with -o DIR" in capsys.readouterr().err
