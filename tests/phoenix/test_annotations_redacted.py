"""Annotations read back from a real Phoenix hold no secret: label, explanation and metadata redacted.

Guard (issue 23, item 8): ``_scoring/_sinks.py`` PhoenixSink sending its fields unredacted
(``clean = self._redaction.json`` -> ``clean = lambda value, attribute: value``).
tests/test_guards.py checks the request bodies against a local recorder; this checks what
Phoenix stored and would show.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from leaky_evaluator import EVERY_SECRET, SECRETS, Leaky

import tracesim


def test_annotations_in_phoenix_hold_no_secret(phoenix: Any, project: str, tmp_path: Path) -> None:
    tracesim.configure(
        service_name=project,
        exporters=["otlp"],
        otlp_endpoint=phoenix.http_endpoint,
        spool_dir=tmp_path / "spool",
        phoenix_annotations=True,
    )

    @tracesim.trace(evaluators=[Leaky()], expected=f"expected {EVERY_SECRET}")
    def answer() -> str:
        return "ok"

    answer()
    assert tracesim.force_flush(60)
    (span,) = phoenix.spans(project, min_count=1)
    span_id = span["context"]["span_id"]
    (annotation,) = phoenix.span_annotations(project, [span_id], min_count=1)
    assert tracesim.shutdown(30)

    assert annotation["name"] == "leaky"
    assert annotation["result"]["score"] == 0.5
    stored = json.dumps(annotation)
    unescaped = stored.replace("\\n", "\n").replace("\\\\", "\\").replace('\\"', '"')
    for kind, (_, fragment) in SECRETS.items():
        assert fragment not in stored, kind
        assert fragment not in unescaped, kind
    # the fields arrived, redacted: not dropped
    assert "[REDACTED:" in annotation["result"]["label"]
    assert "[REDACTED:" in annotation["result"]["explanation"]
    assert "[REDACTED:" in annotation["metadata"]["details"]["seen"]
    assert "[REDACTED:" in annotation["metadata"]["expected"]
    assert sum("[REDACTED:" in key for key in annotation["metadata"]["details"]) == len(SECRETS)
