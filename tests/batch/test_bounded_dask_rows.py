"""``--engine dask`` reads a JSONL block as ``tracesim eval`` reads the whole file, within limits.

A data file of good rows around a 65 MiB line (a valid row, over the 64 MiB line limit) and a
row 950 levels deep (over the 900 levels eval scores) is scored on a real Dask ``LocalCluster``
of one worker process, in a child process with its data segment capped at 1 GiB: the good
rows are scored (a row 300 deep is one: eval's limit, not the 256 of a baseline), the bad ones
are bad rows naming the limit, with eval's wording, and the worker's peak memory is bounded
(it reads past the long line a block at a time, as eval does, instead of holding its block).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tracesim.batch._records import Columns
from tracesim.cli._eval_io import read_rows

sys.path.insert(0, str(Path(__file__).parents[1] / "tracefile"))
try:
    from test_bounded_trace_files import _BOUND_MB, _LONG, child
finally:
    sys.path.pop(0)

SCORE = """
import json, resource, sys

import distributed

from tracesim import batch


def peak_kb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


if __name__ == "__main__":  # the worker is a spawned process: it imports this file again
    options = {"n_workers": 1, "threads_per_worker": 1, "processes": True, "dashboard_address": ":0"}
    with distributed.LocalCluster(**options) as cluster, distributed.Client(cluster) as client:
        source = batch.Records(sys.argv[1], block_bytes=64)  # a part per line
        report = batch.score(source, evaluators=["exact"], output=sys.argv[2], client=client,
                             output_format="jsonl")
        worker_kb = max(client.run(peak_kb).values())
    rows = [json.loads(l) for p in sorted(__import__("glob").glob(sys.argv[2] + "/*.jsonl")) for l in open(p)]
    print(json.dumps({"rows": rows, "worker_mb": worker_kb / 1024, "failed": report.failed_parts}))
"""

_DEEP = 950
_VALID_DEEP = 300
LONG_ROW = "a line longer than 67,108,864 bytes (the limit on lines)"
DEEP_ROW = "JSON nested deeper than 900 levels (the limit on nesting)"


def _nested(depth: int) -> bytes:
    """A row whose output nests ``depth`` levels, the row's own object counted."""
    return b'{"expected": "x", "output": ' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}\n"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Lines: good, 65 MiB, 950 deep, 300 deep, good."""
    path = tmp_path_factory.mktemp("rows") / "answers.jsonl"
    with path.open("wb") as handle:
        handle.write(b'{"id": "first", "output": "Paris", "expected": "Paris"}\n')
        handle.write(b'{"expected": "a", "output": "')  # a valid row, but over the limit on lines
        for _ in range(_LONG // (1 << 20)):
            handle.write(b"a" * (1 << 20))
        handle.write(b'"}\n')
        handle.write(_nested(_DEEP))
        handle.write(_nested(_VALID_DEEP))
        handle.write(b'{"id": "last", "output": "Rome", "expected": "Paris"}\n')
    return path


def test_dask_scores_the_good_rows_and_names_the_long_and_deep_ones(data: Path, tmp_path: Path) -> None:
    pytest.importorskip("distributed", reason="the 'dask' extra is not installed")
    (tmp_path / "score.py").write_text(SCORE, encoding="utf-8")

    run = child("score.py", str(data), str(tmp_path / "scores"), cwd=tmp_path)

    assert run.status == 0, run.err[-3000:]
    found = json.loads(run.out)
    assert not found["failed"]
    rows = {row["row"]: row for row in found["rows"]}
    assert sorted(rows) == [1, 2, 3, 4, 5]
    assert [rows[n]["bad_row"] for n in (1, 4, 5)] == [None, None, None]
    assert [rows[n]["id"] for n in (1, 5)] == ["first", "last"]
    assert rows[2]["bad_row"] == LONG_ROW
    assert rows[3]["bad_row"] == DEEP_ROW
    assert found["worker_mb"] < _BOUND_MB, found["worker_mb"]
    assert run.peak_mb < _BOUND_MB, run.peak_mb
    print(f"worker peak {found['worker_mb']:.0f} MB")


def test_eval_reads_the_same_file_the_same_way(data: Path) -> None:
    bad = {row[0]: row[1] for row in read_rows(data, "jsonl", Columns()) if len(row) == 2}

    assert bad == {2: LONG_ROW, 3: DEEP_ROW}
