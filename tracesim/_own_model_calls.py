"""The context marker of tracesim's own model calls, which are never exported as spans.

Kept apart from the evaluators so the runtime's span pipeline can check it without importing them.
"""

from __future__ import annotations

from opentelemetry import context as otel_context

__all__ = ["MODEL_CALL_KEY", "detach", "in_model_call", "untraced"]

MODEL_CALL_KEY = otel_context.create_key("tracesim.model_call")
# The keys OpenTelemetry instrumentations check before they record anything (the API's own,
# which its batch processor also sets around export).
_SUPPRESS_KEYS = tuple(
    getattr(otel_context, name, name.strip("_").lower())
    for name in ("_SUPPRESS_INSTRUMENTATION_KEY", "_SUPPRESS_HTTP_INSTRUMENTATION_KEY")
)


def untraced() -> object:
    """Attach a context in which nothing is traced; returns the token for `detach`."""
    ctx = otel_context.set_value(MODEL_CALL_KEY, True)
    for key in _SUPPRESS_KEYS:
        ctx = otel_context.set_value(key, True, ctx)
    return otel_context.attach(ctx)


def detach(token: object) -> None:
    """Undo `untraced`."""
    otel_context.detach(token)  # type: ignore[arg-type]


def in_model_call(parent_context: otel_context.Context | None = None) -> bool:
    """Whether a span starting now (under ``parent_context``) belongs to an evaluator's model call."""
    return bool(
        otel_context.get_value(MODEL_CALL_KEY, parent_context) or otel_context.get_value(MODEL_CALL_KEY)
    )
