"""Trace files, spool files, golden datasets and AgentTest's config are read within limits.

A trace file is read line by line: a line over 64 MiB is read past a block at a time (never
held whole) and one nested more than 256 levels deep is refused before ``json`` recurses into
it. Either is a bad line, skipped and named with its file, line and limit, as a torn line is;
the good spans around it are read. Each reader runs as a user runs it, in its own process with
its data segment capped at 1 GiB, and its peak memory (the child's own rusage) is bounded.

The files: two good spans around a 65 MiB line (a JSON string of ``a``), a 2 GiB line (sparse:
it takes no disk) and a line 100,000 brackets deep.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest
from hostile import GOOD_NAMES, good_line, line, request, span
from peak_memory import Run, capped

_BOUND_MB = 400  # what skipping the bad lines may cost at most, generously
_LONG = 65 * 1024 * 1024  # a line over the 64 MiB limit
_HUGE = 2 << 30  # "a single 2 GB line"
_DEEP = 100_000

ALIAS_BOMB = "\n".join(
    [
        'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *(f"{n}: &{n} [{','.join([f'*{p}'] * 9)}]" for p, n in zip("abcdefgh", "bcdefghi", strict=True)),
        "evaluators: *i",
        "",
    ]
)


def child(*args: str, cwd: Path, timeout: float = 240) -> Run:
    """``python ARGS`` in ``cwd`` under the cap: status, output, and its own peak RSS in MB."""
    run = capped([sys.executable, *args], cwd=cwd, timeout=timeout)
    print(f"\n{' '.join(args[-3:])}: exit {run.status}, peak {run.peak_mb:.0f} MB, {run.seconds:.1f} s")
    return run


def _write_long_line(handle: object, size: int) -> None:
    """A JSON object holding a string of ``size`` bytes of ``a``, written a block at a time."""
    write = handle.write  # type: ignore[attr-defined]
    write(b'{"x": "')
    block = b"a" * (1 << 20)
    for _ in range(size // len(block)):
        write(block)
    write(b'"}\n')


def _write_sparse_line(handle: object, size: int) -> None:
    """A line of ``size`` NUL bytes that takes no disk: a hole, then its newline."""
    handle.seek(size, os.SEEK_CUR)  # type: ignore[attr-defined]
    handle.write(b"\n")  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def hostile_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """good-before, a 65 MiB line, a 2 GiB line, a 100k-deep line, good-after (lines 1 to 5)."""
    path = tmp_path_factory.mktemp("traces") / "traces.jsonl"
    with path.open("wb") as handle:
        handle.write(good_line(GOOD_NAMES[0], "1111111111111111").encode() + b"\n")
        _write_long_line(handle, _LONG)
        _write_sparse_line(handle, _HUGE)
        handle.write(b"[" * _DEEP + b"\n")
        handle.write(good_line(GOOD_NAMES[1], "3333333333333333").encode() + b"\n")
    return path


def assert_bad_lines_named(text: str, path: Path) -> None:
    assert f"{path}:2: skipped a line longer than 67,108,864 bytes (the limit on lines)" in text, text[-3000:]
    assert f"{path}:3: skipped a line longer than 67,108,864 bytes (the limit on lines)" in text, text[-3000:]
    assert f"{path}:4: skipped a line of JSON nested deeper than 256 levels (the limit on nesting)" in text
    assert "Traceback" not in text, text[-3000:]


# -- show and report ------------------------------------------------------------------------------


def test_show_skips_long_and_deep_lines_and_shows_the_rest(hostile_trace: Path, tmp_path: Path) -> None:
    run = child("-m", "tracesim", "show", str(hostile_trace), cwd=tmp_path)

    assert run.status == 0, run.err[-3000:]  # bad lines are skipped with a warning (exit 0)
    assert all(name in run.out for name in GOOD_NAMES), run.out
    assert "showing 1 of 1 trace" in run.out, run.out  # the two spans share a trace
    assert_bad_lines_named(run.out + run.err, hostile_trace)
    assert run.peak_mb < _BOUND_MB, run.peak_mb


def test_report_skips_long_and_deep_lines_and_counts_the_rest(hostile_trace: Path, tmp_path: Path) -> None:
    run = child("-m", "tracesim", "report", str(hostile_trace), "--json", cwd=tmp_path)

    assert run.status == 0, run.err[-3000:]
    names = sorted(row["name"] for row in json.loads(run.out)["spans"])
    assert names == sorted(GOOD_NAMES)
    assert_bad_lines_named(run.out + run.err, hostile_trace)
    assert run.peak_mb < _BOUND_MB, run.peak_mb


def test_read_jsonl_warns_of_each_bad_line_and_yields_the_rest(tmp_path: Path) -> None:
    from tracesim.tracefile import TraceFileWarning, read_jsonl

    path = tmp_path / "traces.jsonl"
    with path.open("wb") as handle:
        handle.write(good_line(GOOD_NAMES[0], "1111111111111111").encode() + b"\n")
        _write_sparse_line(handle, 64 * 1024 * 1024 + 1)  # one byte over, its newline aside
        handle.write(b'{"a": ' * 300 + b"1" + b"}" * 300 + b"\n")
        handle.write(good_line(GOOD_NAMES[1], "3333333333333333").encode())  # no newline: still read

    with pytest.warns(TraceFileWarning) as caught:
        requests = list(read_jsonl(path))

    assert len(requests) == 2
    messages = [str(w.message) for w in caught]
    assert messages == [
        f"{path}:2: skipped a line longer than 67,108,864 bytes (the limit on lines)",
        f"{path}:3: skipped a line of JSON nested deeper than 256 levels (the limit on nesting)",
    ]


# -- batch ----------------------------------------------------------------------------------------

BATCH = """
import json, sys
from tracesim import batch
report = batch.score(batch.Spans(sys.argv[1]), evaluators=["exact"], output=sys.argv[2], engine="local")
rows = [json.loads(l) for p in sorted(__import__("glob").glob(sys.argv[2] + "/*.jsonl")) for l in open(p)]
print(json.dumps(rows))
"""


def _dropped_record() -> str:
    """What the export queue writes when it dropped spans: a record, not a span of the program."""
    record = span("tracesim.export.dropped", span_id="4444444444444444")
    record["attributes"] = [{"key": "tracesim.export.dropped_spans", "value": {"intValue": "7"}}]
    return line(request(record))


def _batch_file(tmp_path: Path, *, huge: bool) -> Path:
    """good-before, a 65 MiB line, the 2 GiB line (or a blank), a deep line, good-after, a record."""
    path = tmp_path / "traces.jsonl"
    with path.open("wb") as handle:
        handle.write(good_line(GOOD_NAMES[0], "1111111111111111").encode() + b"\n")
        _write_long_line(handle, _LONG)
        if huge:
            _write_sparse_line(handle, _HUGE)
        else:
            handle.write(b"\n")
        handle.write(b"[" * _DEEP + b"\n")
        handle.write(good_line(GOOD_NAMES[1], "3333333333333333").encode() + b"\n")
        handle.write(_dropped_record().encode() + b"\n")
    (tmp_path / "score.py").write_text(BATCH, encoding="utf-8")
    return path


def _batch_rows(tmp_path: Path, path: Path) -> tuple[Run, dict[int, dict[str, object]]]:
    run = child("score.py", str(path), str(tmp_path / "scores.jsonl"), cwd=tmp_path)
    assert run.status == 0, run.err[-3000:]
    assert "Traceback" not in run.err, run.err[-3000:]
    return run, {row["row"]: row for row in json.loads(run.out)}


def test_batch_scores_the_good_spans_names_the_bad_lines_and_no_dropped_records(tmp_path: Path) -> None:
    run, rows = _batch_rows(tmp_path, _batch_file(tmp_path, huge=False))

    assert sorted(rows) == [1, 2, 4, 5], rows.keys()  # line 6, the dropped-spans record, is no row
    assert [rows[n]["span_name"] for n in (1, 5)] == list(GOOD_NAMES)
    assert rows[2]["bad_row"] == "a line longer than 67,108,864 bytes (the limit on lines)"
    assert rows[4]["bad_row"] == "JSON nested deeper than 256 levels (the limit on nesting)"
    assert run.peak_mb < _BOUND_MB, run.peak_mb


def test_batch_reads_past_a_2_gib_line(tmp_path: Path) -> None:
    run, rows = _batch_rows(tmp_path, _batch_file(tmp_path, huge=True))

    assert rows[3]["bad_row"] == "a line longer than 67,108,864 bytes (the limit on lines)"
    assert run.peak_mb < _BOUND_MB, run.peak_mb


# -- the spool ------------------------------------------------------------------------------------

SPOOL = """
import json, logging, sys
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tracesim.exporters import SpoolingExporter
logging.basicConfig(level=logging.WARNING)
inner = InMemorySpanExporter()
exporter = SpoolingExporter(inner, sys.argv[1])
assert exporter.force_flush(60_000)
stats = exporter.stats
print(json.dumps({"names": [s.name for s in inner.get_finished_spans()], "rejected": stats.rejected,
                  "pending": stats.pending, "delivered": stats.delivered}))
exporter.shutdown()
"""


def test_the_spool_refuses_an_oversized_and_a_deep_file_and_delivers_the_rest(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    spool.mkdir()
    base = "0000000000000000000{}-1-00000{}-1.jsonl"
    (spool / base.format(1, 1)).write_text(good_line(GOOD_NAMES[0], "1111111111111111") + "\n")
    with (spool / base.format(2, 2)).open("wb") as handle:  # a file left by something else
        _write_sparse_line(handle, _HUGE)
    (spool / base.format(3, 3)).write_bytes(b"[" * _DEEP + b"\n")
    (spool / base.format(4, 4)).write_text(good_line(GOOD_NAMES[1], "3333333333333333") + "\n")
    (tmp_path / "spool_run.py").write_text(SPOOL, encoding="utf-8")

    run = child("spool_run.py", str(spool), cwd=tmp_path)

    assert run.status == 0, run.err[-3000:]
    assert "Traceback" not in run.err, run.err[-3000:]
    result = json.loads(run.out)
    assert result["names"] == list(GOOD_NAMES)
    assert (result["rejected"], result["pending"], result["delivered"]) == (2, 0, 2)
    assert "more than 67,108,865 bytes (the limit on spool file size)" in run.err, run.err
    assert "JSON nested deeper than 256 levels" in run.err, run.err
    assert sorted(os.listdir(spool)) == []
    assert run.peak_mb < _BOUND_MB, run.peak_mb


# -- golden datasets ------------------------------------------------------------------------------

GOLDEN = """
import sys, tracesim
try:
    tracesim.Golden(sys.argv[1], key="question")
except tracesim.ConfigError as exc:
    print(exc)
    sys.exit(2)
"""


@pytest.mark.parametrize("bad", ["long", "deep"])
def test_a_golden_file_over_a_limit_is_a_config_error_naming_line_and_limit(tmp_path: Path, bad: str) -> None:
    path = tmp_path / "golden.jsonl"
    with path.open("wb") as handle:
        handle.write(b'{"question": "q", "expected": "a"}\n')
        if bad == "long":
            _write_sparse_line(handle, _LONG)
        else:
            handle.write(b'{"question": ' * _DEEP + b"\n")
    (tmp_path / "golden.py").write_text(GOLDEN, encoding="utf-8")

    run = child("golden.py", str(path), cwd=tmp_path)

    assert run.status == 2, run.err[-3000:]
    limit = "longer than 67,108,864 bytes (the limit on lines)" if bad == "long" else "deeper than 256 levels"
    assert f"{path}, line 2: " in run.out, run.out
    assert limit in run.out, run.out
    assert "Traceback" not in run.err
    assert run.peak_mb < _BOUND_MB, run.peak_mb


# -- AgentTest's config ---------------------------------------------------------------------------

AGENT_TEST = """
from tracesim.integrations.agenttest import agent_test


@agent_test(criteria=["similarity"])
def test_capital():
    return {"actual": "Paris", "expected": "Paris"}
"""


def test_an_alias_bomb_in_agenttest_config_is_a_config_error(tmp_path: Path) -> None:
    config = tmp_path / ".agenttest" / "config.yaml"
    config.parent.mkdir()
    config.write_text(ALIAS_BOMB, encoding="utf-8")
    assert config.stat().st_size < 400
    (tmp_path / "test_agent.py").write_text(textwrap.dedent(AGENT_TEST), encoding="utf-8")

    run = child(
        "-m", "pytest", "-q", "-p", "tracesim.integrations.pytest_plugin", "-p", "no:cacheprovider",
        "test_agent.py", cwd=tmp_path, timeout=180,
    )  # fmt: skip

    assert run.status == 1, run.out[-3000:]  # the test fails, with the config's error
    assert "ConfigError" in run.out, run.out[-3000:]
    assert "YAML aliases expand to more than 100,000 nodes" in run.out, run.out[-3000:]
    assert str(config) in run.out, run.out[-3000:]
    assert run.peak_mb < _BOUND_MB, run.peak_mb
