"""Real disks that refuse data, for the local file exporters' tests (spans and log records).

- `run_with_file_size_limit`: a subprocess whose file size limit (``RLIMIT_FSIZE``) cuts the
  third line of a file mid-way (a real short write, then ``EFBIG``), lifted again later.
- `fill_then_free`: a small tmpfs filled up by a real filler file, then freed (root only; the
  test is skipped naming what is missing otherwise).
- `assert_nothing_lost`: what every such test checks of the file it reads back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest


def mount_tmpfs(directory: Path, options: str) -> None:
    """Mount a tmpfs with ``options`` on ``directory``, or skip the test saying why not."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a tmpfs")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(directory)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"needs root to mount a tmpfs (mount said: {mounted.stderr.strip()})")


def umount(directory: Path) -> None:
    subprocess.run(["umount", str(directory)], check=True)


@contextmanager
def small_tmpfs(directory: Path, size: str = "64k") -> Iterator[Path]:
    """A fresh tmpfs of ``size`` at ``directory``; close every file in it before leaving."""
    directory.mkdir()
    mount_tmpfs(directory, f"size={size}")
    try:
        yield directory
    finally:
        umount(directory)


def fill_then_free(disk: Path, export: Callable[[str], bool]) -> tuple[list[str], list[str]]:
    """Export lines of about 3 KB into a 64 KB ``disk`` until three fail, then free space.

    ``export(name)`` writes one line named ``name`` and says whether it was written. Returns
    the names reported written and the names that failed; three more named ``after0`` ..
    ``after2`` are exported once space has returned (their results are not kept).
    """
    filler = disk / "filler"
    filler.write_bytes(b"\0" * 32 * 1024)
    written: list[str] = []
    failed: list[str] = []
    for i in range(40):  # the disk is full after about ten lines
        name = f"s{i:02d}"
        (written if export(name) else failed).append(name)
        if len(failed) == 3:
            break
    assert len(failed) == 3, "the tmpfs never filled up"
    filler.unlink()  # space returns
    for i in range(3):
        export(f"after{i}")
    return written, failed


SPANS_SETUP_HEAD = """
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tracesim.exporters import JsonlExporter
from tracesim.exporters._jsonl import encode_line
from tracesim.exporters._otlp_json_encode import pieces_or_fallback

memory = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(memory))
tracer = provider.get_tracer("t")
exporter = JsonlExporter("traces.jsonl")
SUCCESS = SpanExportResult.SUCCESS
"""
"""The start of a `run_with_file_size_limit` setup: a real provider whose spans ``memory`` keeps,
its ``tracer``, the ``exporter`` on ``traces.jsonl``, ``SUCCESS``; the caller adds ``batch`` and
``line_bytes``."""


# The caller's setup defines ``exporter`` (export, force_flush, shutdown), ``batch(name)``
# (one batch whose line has the same size for every name of the same length), ``SUCCESS``
# (what export returns when the line is written) and ``line_bytes`` (the size of one line).
_FILE_SIZE_LIMIT = r"""
import json, resource, signal
{setup}
written, failed = [], []

def export(name):
    ok = exporter.export(batch(name)) == SUCCESS
    (written if ok else failed).append(name)

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past the limit a write is short, then EFBIG
_, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (line_bytes * 5 // 2, hard))  # the third line is cut mid-way
for i in range(10):
    export(f"full-{{i:02d}}")
resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))  # space returns
for i in range(3):
    export(f"after-{{i:02d}}")
flushed = exporter.force_flush()
exporter.shutdown()
print(json.dumps({{"written": written, "failed": failed, "flushed": flushed}}))
"""


def run_with_file_size_limit(cwd: Path, setup: str) -> tuple[dict[str, Any], str]:
    """Run the file size limit scenario over the exporter ``setup`` makes; (result, stderr).

    The result holds the names ``written`` and ``failed`` and whether the final flush wrote
    everything (``flushed``). The scenario itself checks that the limit was really hit mid-line.
    """
    done = subprocess.run(
        [sys.executable, "-c", _FILE_SIZE_LIMIT.format(setup=setup)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    assert result["written"][:2] == ["full-00", "full-01"]
    assert "full-02" in result["failed"]  # the limit was really hit, mid-line
    return result, done.stderr


def assert_nothing_lost(names: list[str], written: list[str], expected: set[str]) -> None:
    """``names`` read back hold each line once, all reported ``written``, and just ``expected``."""
    assert len(names) == len(set(names)), "a line was written twice"
    assert set(written) <= set(names), "a line reported written is lost"
    assert set(names) == expected
