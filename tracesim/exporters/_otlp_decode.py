"""Forwarder: OTLP/JSON decoding moved to `tracesim.tracefile._sdk_spans`.

Kept for ``tests/otlp_sink.py`` (outside this package's owners); import the new path instead.
It goes when that file has moved.
"""

from __future__ import annotations

from tracesim.tracefile._sdk_spans import readable_spans, request_to_protobuf

__all__ = ["readable_spans", "request_to_protobuf"]
