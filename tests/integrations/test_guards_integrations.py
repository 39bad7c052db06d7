"""Guards: OpenTelemetry's suppression key silences tracesim's own spans (issue 23, item 8).

OpenTelemetry's own exporters, and any code that must not be traced, set the suppression key
(``opentelemetry.instrumentation.utils.suppress_instrumentation()``); nothing is recorded
under it. The same guards for each integration's spans are in its distribution's tests
(``integrations/<name>/tests/test_<name>_guards.py``).
"""

from __future__ import annotations

from opentelemetry.instrumentation.utils import suppress_instrumentation

import tracesim
from tracesim.testing import capture_spans


def test_tracesims_own_spans_under_suppression_are_not_exported() -> None:
    @tracesim.trace
    def traced() -> str:
        return "ok"

    with capture_spans() as captured:
        with suppress_instrumentation():
            traced()
            with tracesim.span("block"):
                pass
        traced()
        names = [s.name for s in captured.spans]
    assert names == ["traced"]
