"""What leaves the process: the local JSON-lines trace file, the console, and OTLP backends.

Every exporter is an OpenTelemetry ``SpanExporter``, so any of them also works with a plain
OpenTelemetry SDK pipeline, and any OpenTelemetry exporter works with `tracesim.configure`.
`RedactingExporter` runs tracesim's redaction over every span before any exporter sees it;
`SpoolingExporter` keeps what a backend cannot take yet and sends it later.

Reading trace files back (`SpanRecord`, `load_spans`, `render_trees`...) is
`tracesim.tracefile`; sending them again is `tracesim.batch.replay`. Their old names here still
work for one release, with a ``DeprecationWarning``.

Names are imported when first used (``import tracesim`` must stay quick: the console's
renderer and the OTLP exporters are not needed to trace a call).
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

from tracesim import _outputs

if TYPE_CHECKING:
    from tracesim.exporters._console import ConsoleExporter
    from tracesim.exporters._jsonl import JsonlExporter
    from tracesim.exporters._otlp import otlp_exporter
    from tracesim.exporters._redacting import RedactingExporter, Redaction
    from tracesim.exporters._spool import SpoolingExporter, SpoolStats

_MODULE_OF = {
    "ConsoleExporter": "tracesim.exporters._console",
    "JsonlExporter": "tracesim.exporters._jsonl",
    "RedactingExporter": "tracesim.exporters._redacting",
    "Redaction": "tracesim.exporters._redacting",
    "SpoolStats": "tracesim.exporters._spool",
    "SpoolingExporter": "tracesim.exporters._spool",
    "otlp_exporter": "tracesim.exporters._otlp",
}

MOVED = {
    "EventRecord": "tracesim.tracefile",
    "LinkRecord": "tracesim.tracefile",
    "SpanRecord": "tracesim.tracefile",
    "TraceFileWarning": "tracesim.tracefile",
    "load_spans": "tracesim.tracefile",
    "read_jsonl": "tracesim.tracefile",
    "render_trees": "tracesim.tracefile",
    "rotated_files": "tracesim.tracefile",
    "spans_from_request": "tracesim.tracefile",
    "ReplayReport": "tracesim.batch",
    "replay": "tracesim.batch",
}
"""Names this package exported before the trace file and replay had packages of their own, and
where they live now. Deprecated: they go in the next release."""

__all__ = [
    "ConsoleExporter",
    "JsonlExporter",
    "RedactingExporter",
    "Redaction",
    "SpoolStats",
    "SpoolingExporter",
    "otlp_exporter",
]


def __getattr__(name: str) -> Any:
    if (new_home := MOVED.get(name)) is not None:
        warnings.warn(
            _outputs.text(  # tracesim's rule for any warning text (here only names of its own)
                f"tracesim.exporters.{name} moved to {new_home}.{name}; import it from there "
                "(the old name goes in the next release)"
            ),
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(new_home), name)  # never cached: each use warns
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'tracesim.exporters' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
