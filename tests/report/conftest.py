"""Fixtures of the report tests: trace files written through a real OpenTelemetry SDK."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .tracefiles import TraceWriter, write_known


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[Callable[..., TraceWriter]]:
    """A factory of `TraceWriter`s on files under ``tmp_path``; all are closed at teardown."""
    made: list[TraceWriter] = []

    def make(name: str = "traces.jsonl", **options: Any) -> TraceWriter:
        w = TraceWriter(tmp_path / name, **options)
        made.append(w)
        return w

    yield make
    for w in made:
        w.close()


@pytest.fixture
def known_file(writer: Callable[..., TraceWriter]) -> Path:
    """The reference file of `write_known`, closed and ready to read."""
    w = writer()
    write_known(w)
    w.close()
    return w.path
