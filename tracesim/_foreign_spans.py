"""The input and output of a span some other instrumentation made, read from its conventions.

Rules score spans tracesim did not create (an LLM call traced by an OpenAI, Anthropic or
LangChain instrumentation). Their text is where each convention puts it, tried in order:

- OpenTelemetry GenAI: ``gen_ai.output.messages`` / ``gen_ai.input.messages``, JSON lists
  of ``{"role", "parts": [{"type": "text", "content"}, {"type": "tool_call", ...}]}``;
- OpenInference: ``llm.output_messages.<i>.message.content`` /
  ``llm.input_messages.<i>.message.{role,content}``, then ``output.value`` / ``input.value``
  (also tracesim's own);
- OpenLLMetry: ``gen_ai.completion.<i>.content`` / ``gen_ai.prompt.<i>.{role,content}``;
- a tool's execution (GenAI ``execute_tool``, as pydantic-ai writes it):
  ``gen_ai.tool.call.result`` / ``gen_ai.tool.call.arguments``;
- pydantic-ai's agent run (``invoke_agent``): ``final_result`` / the last user text of
  ``pydantic_ai.all_messages``.

The output is the assistant's text (its tool calls, as JSON of a ``{"name", "arguments"}``
list, when it wrote none, in every convention); the input is the last user message, which is
what a judge or a golden file is keyed on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = [
    "KIND_OF_OPERATION",
    "answer_text",
    "requested_tool_calls",
    "span_input",
    "span_kinds",
    "span_output",
]

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
        >>> span_output({"llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "lookup",
        ...     "output.value": '{"choices": []}'})
        '[{"name":"lookup","arguments":null}]'
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
        calls = _flat_tool_calls(attributes, prefix)
        if calls:  # the answer is a tool call: the call, not the raw response in output.value
            return _calls_json([{"name": name, "arguments": arguments} for name, arguments, _ in calls])
    for key in ("final_result", "gen_ai.tool.call.result"):  # pydantic-ai's agent run, a tool's result
        value = attributes.get(key)
        if isinstance(value, str):
            return value
    value = attributes.get("output.value")
    return value if isinstance(value, str) else _NOTHING


def span_input(attributes: Mapping[str, Any]) -> str | None:
    """The input text of a span (the last user message of a chat), or None.

    Example:
        >>> span_input({"gen_ai.input.messages": '[{"role": "system", "parts": [{"type": "text",'
        ...     ' "content": "Be brief."}]}, {"role": "user", "parts": [{"type": "text",'
        ...     ' "content": "Capital of Poland?"}]}]'})
        'Capital of Poland?'
        >>> span_input({"gen_ai.tool.name": "lookup", "gen_ai.tool.call.arguments": '{"city":"Warsaw"}'})
        '{"city":"Warsaw"}'
        >>> span_input({"gen_ai.input.messages": '[{"role": "user", "parts": [{"type": "text",'
        ...     ' "content": "Weather?"}]}, {"role": "user", "parts": [{"type": "tool_call_response",'
        ...     ' "result": "12 C"}]}]'})
        'Weather?'
    """
    raw = attributes.get("gen_ai.input.messages")
    if raw is not None:
        # the last user message with text: in a tool loop the last "user" message may hold only
        # the tool's results (pydantic-ai's), and the question is the one before
        text = _genai_text(raw, last_user=True, with_text=True)
        if text is not None:
            return text
    raw = attributes.get("pydantic_ai.all_messages")  # the whole run: the last user message with text
    if raw is not None:
        text = _genai_text(raw, last_user=True, with_text=True)
        if text is not None:
            return text
    for prefix in ("llm.input_messages.", "gen_ai.prompt."):
        found = _flat_messages(attributes, prefix)
        if found:
            users = [content for role, content in found if role == "user"]
            return users[-1] if users else found[-1][1]
    value = attributes.get("gen_ai.tool.call.arguments")  # a tool's execution: its arguments
    if isinstance(value, str):
        return value
    value = attributes.get("input.value")
    return value if isinstance(value, str) else _NOTHING


def requested_tool_calls(attributes: Mapping[str, Any]) -> list[tuple[str, Any, str | None]]:
    """The tool calls an LLM span's answer asked for: ``(name, arguments, call id)`` each, the
    arguments as the convention recorded them (JSON text, a mapping, None). Empty when none.

    Read from GenAI ``gen_ai.output.messages`` parts of type ``tool_call``, else OpenInference
    ``llm.output_messages.<i>.message.tool_calls.<j>.tool_call.{function.name,function.arguments,id}``,
    else OpenLLMetry ``gen_ai.completion.<i>.tool_calls.<j>.{name,arguments,id}``.

    Example:
        >>> requested_tool_calls({"gen_ai.completion.0.tool_calls.0.name": "lookup",
        ...     "gen_ai.completion.0.tool_calls.0.arguments": '{"city": "Warsaw"}'})
        [('lookup', '{"city": "Warsaw"}', None)]
    """
    raw = attributes.get("gen_ai.output.messages")
    if isinstance(raw, str):
        try:
            messages = json.loads(raw)
        except ValueError:
            messages = None
        found: list[tuple[str, Any, str | None]] = []
        for message in messages if isinstance(messages, list) else ():
            parts = message.get("parts") if isinstance(message, Mapping) else None
            for part in parts if isinstance(parts, list) else ():
                if isinstance(part, Mapping) and part.get("type") == "tool_call":
                    name, call_id = part.get("name"), part.get("id")
                    if isinstance(name, str) and name:
                        found.append((name, part.get("arguments"), None if call_id is None else str(call_id)))
        if found:
            return found
    for prefix in ("llm.output_messages.", "gen_ai.completion."):
        calls = _flat_tool_calls(attributes, prefix)
        if calls:
            return calls
    return []


def answer_text(attributes: Mapping[str, Any]) -> bool:
    """Whether an LLM span's answer has text (False for an answer that only requests tool calls).

    Example:
        >>> answer_text({"llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "lookup"})
        False
        >>> answer_text({"llm.output_messages.0.message.content": "12 C in Warsaw"})
        True
    """
    raw = attributes.get("gen_ai.output.messages")
    if isinstance(raw, str):
        try:
            messages = json.loads(raw)
        except ValueError:
            return True  # cut, so not JSON any more: text it is
        if isinstance(messages, list):
            return any(isinstance(m, Mapping) and _has_text(m) for m in messages)
    for prefix in ("llm.output_messages.", "gen_ai.completion."):
        if any(content for _, content in _flat_messages(attributes, prefix)):
            return True
    return False


def _flat_tool_calls(attributes: Mapping[str, Any], prefix: str) -> list[tuple[str, Any, str | None]]:
    """Tool calls flattened as ``<prefix><i>[.message].tool_calls.<j>.[tool_call.][function.]<field>``
    (OpenInference and OpenLLMetry), in message then call order; calls without a name are left out."""
    found: dict[tuple[int, int], dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(prefix) or ".tool_calls." not in key:
            continue
        index, _, rest = key[len(prefix) :].partition(".")
        rest = rest.removeprefix("message.")
        if not index.isdigit() or not rest.startswith("tool_calls."):
            continue
        number, _, field = rest[len("tool_calls.") :].partition(".")
        field = field.removeprefix("tool_call.").removeprefix("function.")
        if number.isdigit() and field in ("name", "arguments", "id"):
            found.setdefault((int(index), int(number)), {})[field] = value
    calls: list[tuple[str, Any, str | None]] = []
    for _, fields in sorted(found.items()):
        name, call_id = fields.get("name"), fields.get("id")
        if isinstance(name, str) and name:
            calls.append((name, fields.get("arguments"), None if call_id is None else str(call_id)))
    return calls


def _calls_json(calls: list[dict[str, Any]]) -> str:
    """Tool calls as compact JSON text; arguments given as JSON text of an object are parsed."""
    for call in calls:
        arguments = call["arguments"]
        if isinstance(arguments, str):
            try:
                parsed = json.loads(arguments)
            except ValueError:
                continue
            if isinstance(parsed, dict):
                call["arguments"] = parsed
    return json.dumps(calls, ensure_ascii=False, separators=(",", ":"), default=str)


def _genai_text(raw: Any, *, last_user: bool, with_text: bool = False) -> str | None:
    """Text of GenAI messages: the last user message's, or every message's (an output).

    ``with_text`` takes the last user message that has text (a whole run's messages, where the
    tool results come back as user messages too)."""
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
        if with_text:
            users = [m for m in users if _has_text(m)] or users
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
        return json.dumps(calls, ensure_ascii=False, separators=(",", ":"), default=str)
    return None


def _has_text(message: Mapping[str, Any]) -> bool:
    parts = message.get("parts")
    return isinstance(parts, list) and any(
        isinstance(part, Mapping) and part.get("type") == "text" and isinstance(part.get("content"), str)
        for part in parts
    )


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
