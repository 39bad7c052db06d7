"""The input and output of a span some other instrumentation made, read from its conventions.

Rules score spans tracesim did not create (an LLM call traced by an OpenAI, Anthropic or
LangChain instrumentation). Their text is where each convention puts it, tried in order:

- OpenTelemetry GenAI: ``gen_ai.output.messages`` / ``gen_ai.input.messages``, JSON lists
  of ``{"role", "parts": [{"type": "text", "content"}, {"type": "tool_call", ...}]}``;
- OpenInference: ``llm.output_messages.<i>.message.content`` /
  ``llm.input_messages.<i>.message.{role,content}``, then ``output.value`` / ``input.value``
  (also tracesim's own);
- OpenLLMetry: ``gen_ai.completion.<i>.content`` / ``gen_ai.prompt.<i>.{role,content}``.

The output is the assistant's text (its tool calls, as JSON, when it wrote none); the input
is the last user message, which is what a judge or a golden file is keyed on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["KIND_OF_OPERATION", "span_input", "span_kinds", "span_output"]

KIND_OF_OPERATION = {
    "chat": "LLM",
    "text_completion": "LLM",
    "generate_content": "LLM",
    "embeddings": "EMBEDDING",
    "execute_tool": "TOOL",
    "invoke_agent": "AGENT",
    "create_agent": "AGENT",
    "retrieval": "RETRIEVER",
    "invoke_workflow": "CHAIN",
}
"""GenAI operations (OpenTelemetry conventions) -> OpenInference span kinds, which Phoenix and
other OpenInference backends read to show a span as an LLM call, an embedding, a tool."""

_NOTHING = None


def span_kinds(attributes: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The span's OpenInference kind (lower case) and its GenAI operation; either may be None.

    A span with an operation and no OpenInference kind has the kind of its operation.

    Example:
        >>> span_kinds({"gen_ai.operation.name": "chat"})
        ('llm', 'chat')
    """
    kind = attributes.get("openinference.span.kind")
    operation = attributes.get("gen_ai.operation.name")
    if not isinstance(operation, str):
        operation = None
    if not isinstance(kind, str):
        kind = KIND_OF_OPERATION.get(operation) if operation else None
    return (kind.lower() if kind else None), operation


def span_output(attributes: Mapping[str, Any]) -> str | None:
    """The output text of a span, or None when no convention recorded one.

    Example:
        >>> span_output({"gen_ai.output.messages":
        ...     '[{"role": "assistant", "parts": [{"type": "text", "content": "Warsaw"}]}]'})
        'Warsaw'
        >>> span_output({"llm.output_messages.0.message.content": "Paris"})
        'Paris'
        >>> span_output({"gen_ai.request.model": "gpt-4o"}) is None
        True
    """
    raw = attributes.get("gen_ai.output.messages")
    if raw is not None:
        text = _genai_text(raw, last_user=False)
        if text is not None:
            return text
    for prefix in ("llm.output_messages.", "gen_ai.completion."):
        found = _flat_messages(attributes, prefix)
        if found:
            return "\n".join(content for _, content in found)
    value = attributes.get("output.value")
    return value if isinstance(value, str) else _NOTHING


def span_input(attributes: Mapping[str, Any]) -> str | None:
    """The input text of a span (the last user message of a chat), or None.

    Example:
        >>> span_input({"gen_ai.input.messages": '[{"role": "system", "parts": [{"type": "text",'
        ...     ' "content": "Be brief."}]}, {"role": "user", "parts": [{"type": "text",'
        ...     ' "content": "Capital of Poland?"}]}]'})
        'Capital of Poland?'
    """
    raw = attributes.get("gen_ai.input.messages")
    if raw is not None:
        text = _genai_text(raw, last_user=True)
        if text is not None:
            return text
    for prefix in ("llm.input_messages.", "gen_ai.prompt."):
        found = _flat_messages(attributes, prefix)
        if found:
            users = [content for role, content in found if role == "user"]
            return users[-1] if users else found[-1][1]
    value = attributes.get("input.value")
    return value if isinstance(value, str) else _NOTHING


def _genai_text(raw: Any, *, last_user: bool) -> str | None:
    """Text of GenAI messages: the last user message's, or every message's (an output)."""
    if not isinstance(raw, str):
        return None
    try:
        messages = json.loads(raw)
    except ValueError:
        return raw  # cut to max_value_chars, so no longer JSON: the text is still the best there is
    if not isinstance(messages, list):
        return None
    if last_user:
        users = [m for m in messages if isinstance(m, Mapping) and m.get("role") == "user"]
        messages = users[-1:] if users else messages[-1:]
    texts: list[str] = []
    calls: list[Any] = []
    for message in messages:
        parts = message.get("parts") if isinstance(message, Mapping) else None
        for part in parts if isinstance(parts, list) else ():
            if not isinstance(part, Mapping):
                continue
            if part.get("type") == "text" and isinstance(part.get("content"), str):
                texts.append(part["content"])
            elif part.get("type") == "tool_call":
                calls.append({"name": part.get("name"), "arguments": part.get("arguments")})
    if texts:
        return "\n".join(texts)
    if calls:
        return json.dumps(calls, ensure_ascii=False, separators=(",", ":"))
    return None


def _flat_messages(attributes: Mapping[str, Any], prefix: str) -> list[tuple[str | None, str]]:
    """(role, content) of messages flattened as ``<prefix><i>[.message].{role,content}``."""
    found: dict[int, list[Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(prefix):
            continue
        index, _, field = key[len(prefix) :].partition(".")
        field = field.removeprefix("message.")
        if index.isdigit() and field in ("role", "content"):
            found.setdefault(int(index), [None, None])[field == "content"] = value
    return [
        (role if isinstance(role, str) else None, content)
        for _, (role, content) in sorted(found.items())
        if isinstance(content, str)
    ]
