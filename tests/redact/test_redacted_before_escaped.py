"""A line a terminal shows is redacted before its control characters are made visible.

`visible` shows a tab as ``␉``; redacting after it, the writer's own pass no longer sees the
text a ``redact`` hook (or a pattern) matches. ``tracesim eval`` printed its usage errors, bad
rows and "no row could be scored" line escaped first (issue 23 review, item 5).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import tracesim
from tracesim.cli import main

TICKET = "PRJ\t4411"  # a record a hook knows, tab-separated as in the user's TSV exports


@pytest.fixture
def hooked(tmp_path: Path) -> Iterator[None]:
    tracesim.configure(
        exporters=["jsonl"],
        jsonl_path=str(tmp_path / "t.jsonl"),
        redact=lambda text, attribute: text.replace(TICKET, "[ticket]"),
    )
    try:
        yield
    finally:
        tracesim.shutdown()


def test_a_usage_error_is_redacted_before_it_is_escaped(
    tmp_path: Path, hooked: None, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / f"data {TICKET}.jsonl"
    assert main(["eval", str(missing), "-e", "exact", "--workers", "1"]) == 2
    shown = capsys.readouterr().err
    assert "[ticket]" in shown
    assert "4411" not in shown
