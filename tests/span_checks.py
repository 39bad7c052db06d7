"""What the integrations' tests read off exported spans: one span by name, its evaluation
results, the report of a trace file, and whether any span still carries content.

Shared by the agent frameworks' tests (``integrations/<name>/tests``, where ``tests/`` is on
``sys.path``), so that each framework is checked the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from tracesim.tracefile import SpanRecord

CONTENT_KEYS = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "input.value",
    "output.value",
)
"""Where any instrumentation here records content (messages, tool arguments and results)."""


def one(spans: Iterable[SpanRecord], prefix: str) -> SpanRecord:
    """The one span whose name starts with ``prefix`` (fails when there are none or several)."""
    (found,) = [s for s in spans if s.name.startswith(prefix)]
    return found


def results_of(span: SpanRecord) -> dict[str, dict[str, Any]]:
    """The evaluation results on a span, by evaluator name."""
    return {
        str(event.attributes["gen_ai.evaluation.name"]): dict(event.attributes)
        for event in span.events
        if event.name == "gen_ai.evaluation.result"
    }


def report(path: Path, capsys: pytest.CaptureFixture[str], *, as_json: bool = True) -> Any:
    """``tracesim report`` of a trace file: its JSON (or its text) as a user's terminal gets it."""
    from tracesim.cli import main

    capsys.readouterr()
    assert main(["report", str(path), *(["--json"] if as_json else [])]) == 0
    out = capsys.readouterr().out
    return json.loads(out) if as_json else out


def assert_content_free(
    spans: Sequence[SpanRecord],
    words: Iterable[str],
    *,
    kinds: Iterable[str] = ("invoke_agent", "chat", "execute_tool"),
    keys: Iterable[str] = CONTENT_KEYS,
) -> None:
    """No span carries content: none of ``keys``, and none of ``words`` (from the prompt, the
    answer, the tool's arguments and result) in any attribute; the spans of ``kinds`` (name
    prefixes) are there, and the model calls still have their token counts."""
    assert {s.name.split()[0] for s in spans} >= set(kinds)
    words = tuple(words)
    for span in spans:
        for key in keys:
            assert key not in span.attributes, (span.name, key)
        text = json.dumps(dict(span.attributes), default=str)
        for word in words:
            assert word not in text, (span.name, word)
    chat = next(s for s in spans if s.name.startswith("chat"))
    assert chat.attributes["gen_ai.usage.input_tokens"] > 0  # the rest is recorded
