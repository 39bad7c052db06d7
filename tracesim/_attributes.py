"""`tracesim.attributes`: context a user sets once (session, user, tags, metadata) on every span inside.

The values live in the OpenTelemetry context, so they follow it wherever it goes: into asyncio
tasks, into threads started with `tracesim.ContextThreadPoolExecutor` or
`tracesim.propagate_context`, and onto spans of any instrumentation (an OpenAI call inside the
block gets them too). tracesim's span pipeline writes them when a span starts, with the
OpenInference names backends filter on: ``session.id``, ``user.id``, ``tag.tags``, ``metadata``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.util.types import AttributeValue

from tracesim._capture import dumps

__all__ = ["CONTEXT_KEY", "attributes"]

CONTEXT_KEY = otel_context.create_key("tracesim.attributes")  # read by the span processor
_METADATA_KEY = otel_context.create_key("tracesim.metadata")


@contextlib.contextmanager
def attributes(
    *,
    session_id: str | None = None,
    user_id: str | None = None,
    tags: Sequence[str] | None = None,
    metadata: Mapping[str, Any] | None = None,
    **other: AttributeValue,
) -> Iterator[None]:
    """Put these attributes on every span that starts inside the block, whoever creates it.

    Nested blocks add to the outer ones: tags accumulate, metadata keys merge, the inner
    value of the same attribute wins. Values that are not text are written as text (the
    metadata as one JSON object), so bad input never raises.

    Args:
        session_id: ``session.id``: the conversation or session the call belongs to.
        user_id: ``user.id``: the end user.
        tags: ``tag.tags``: labels to filter on, e.g. ``["beta", "eu"]``.
        metadata: ``metadata``: anything JSON-like, e.g. ``{"plan": "pro"}``.
        other: Any other attributes, by name (e.g. ``deployment="blue"``).

    Example:
        >>> import tracesim
        >>> with tracesim.attributes(session_id="s-42", user_id="u-7", tags=["beta"]):
        ...     pass  # every span started here carries session.id, user.id and tag.tags
    """
    outer: dict[str, AttributeValue] = dict(otel_context.get_value(CONTEXT_KEY) or {})  # type: ignore[call-overload]
    merged_metadata: dict[str, Any] = dict(otel_context.get_value(_METADATA_KEY) or {})  # type: ignore[call-overload]
    if session_id is not None:
        outer["session.id"] = str(session_id)
    if user_id is not None:
        outer["user.id"] = str(user_id)
    if tags is not None:
        known = list(outer.get("tag.tags", ()))  # type: ignore[arg-type]
        new = [tags] if isinstance(tags, str) else list(tags)
        outer["tag.tags"] = [*known, *(str(t) for t in new if str(t) not in known)]
    if metadata is not None and isinstance(metadata, Mapping):
        merged_metadata.update({str(k): v for k, v in metadata.items()})
        outer["metadata"] = dumps(merged_metadata)
    for key, value in other.items():
        outer[key] = value if isinstance(value, (str, bool, int, float)) else dumps(value)
    ctx = otel_context.set_value(CONTEXT_KEY, outer)
    ctx = otel_context.set_value(_METADATA_KEY, merged_metadata, ctx)
    token = otel_context.attach(ctx)
    try:
        yield
    finally:
        otel_context.detach(token)
