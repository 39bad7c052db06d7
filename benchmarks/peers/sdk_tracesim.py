"""tracesim: ``@tracesim.trace(name="agent", kind="agent")`` with its defaults (redaction on).

Spans discarded by the same exporter as raw OpenTelemetry's, or, given a collector's URL,
tracesim's own OTLP path (``exporters=["otlp"]``, its disk spool on, in a temporary folder).
"""

from __future__ import annotations

import tempfile

from _common import Discard
from _shapes import FUNCTIONS, Traced

import tracesim


def build(otlp_url: str | None) -> Traced:
    if otlp_url is None:
        tracesim.configure(exporters=[Discard()], set_global_tracer_provider=False)
        cleanup = None
    else:
        spool = tempfile.TemporaryDirectory(prefix="bench-peers-spool-")
        cleanup = spool.cleanup
        tracesim.configure(
            exporters=["otlp"], otlp_endpoint=otlp_url, spool_dir=spool.name, set_global_tracer_provider=False
        )

    def shutdown() -> None:
        tracesim.shutdown()
        if cleanup is not None:
            cleanup()

    trace = tracesim.trace(name="agent", kind="agent")
    functions = {shape: trace(fn) for shape, fn in FUNCTIONS.items()}
    return Traced(functions, tracesim.force_flush, shutdown)
