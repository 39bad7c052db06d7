"""The scripted server's other wire formats: OpenAI's Responses API and Anthropic's Messages API.

Each answer is built from the request body and the text the server decided to say (its
``judge`` or a scripted ``Reply.content``); `llm_server.LLMServer` routes the requests here::

    status, answer = messages_answer("scripted-model", {"messages": [...]}, "Warsaw.", 1)

A streamed answer is ``{SSE: [data, ...]}`` (OpenAI: ``data:`` lines, then ``[DONE]``) or
``{SSE_EVENTS: [event, ...]}`` (Anthropic's, and the Responses API's: each event also named on an
``event:`` line).
"""

from __future__ import annotations

import json
import re
import time
from http.client import responses
from typing import Any

RESPONSES = "/v1/responses"
MESSAGES = "/v1/messages"
SSE = "__server_sent_events__"  # marks an answer to send as an OpenAI-style stream
SSE_EVENTS = "__named_server_sent_events__"  # an Anthropic-style stream: named events, no [DONE]

Json = dict[str, Any]


def tokens(text: str) -> list[str]:
    """The words the server counts as tokens: ``tokens("Hi, Marie!") == ["hi", "marie"]``."""
    return re.findall(r"\w+", text.lower())


def message_text(message: object) -> str:
    """The text of a message or a content block: a string, or its text parts and tool results."""
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
        return " ".join(_part_text(p) for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def _part_text(part: Json) -> str:
    if part.get("type") == "tool_result":  # Anthropic: a tool's answer sent back by the client
        return message_text(part)
    return str(part.get("text", ""))


def error_body(code: int, message: str | None = None) -> Json:
    """The JSON OpenAI sends with an error status: ``{"error": {"message", "type", "param", "code"}}``."""
    kind = {401: "authentication_error", 429: "rate_limit_error"}.get(code, "invalid_request_error")
    error = {"message": message or f"scripted {code} {responses.get(code, '')}".strip(), "param": None}
    error["type"], error["code"] = "server_error" if code >= 500 else kind, None
    if code == 429:
        error["code"] = "rate_limit_exceeded"
    return {"error": error}


# -- OpenAI Responses ---------------------------------------------------------------------------


def responses_answer(model: str, body: Json, text: str, n: int, tool: str | None = None) -> tuple[int, Json]:
    """The Responses API: ``input`` (text or items) in, one output item with its usage out.

    The item is an assistant message saying ``text``, or a ``function_call`` of ``tool`` (or of
    the function a ``tool_choice`` forces) with ``text`` as its arguments. ``stream: true`` gets
    the event stream (`response_events`).
    """
    given = body.get("input")
    prompt = given if isinstance(given, str) else " ".join(_item_text(m) for m in given or [])
    p, c = len(tokens(prompt)), len(tokens(text))
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "function" and not tool:
        tool = str(choice.get("name"))
    output: Json
    if tool:  # what a model that decided to call a tool answers
        output = {
            "type": "function_call",
            "id": f"fc_{n}",
            "call_id": f"call_{n}",
            "name": tool,
            "arguments": text,
            "status": "completed",
        }
    else:
        output = {
            "type": "message",
            "id": f"msg_{n}",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
    usage = {
        "input_tokens": p,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": c,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": p + c,
    }
    answer = {
        "id": f"resp_{n}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": model,
        "output": [output],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "metadata": {},
        "usage": usage,
    }
    if body.get("stream"):
        return 200, {SSE_EVENTS: response_events(answer)}
    return 200, answer


def _item_text(item: object) -> str:
    """An input item's text: a message's, or what a ``function_call_output`` item returns."""
    if isinstance(item, dict) and item.get("type") == "function_call_output":
        output = item.get("output")
        return output if isinstance(output, str) else ""
    return message_text(item)


def response_events(answer: Json) -> list[Json]:
    """A streamed Responses answer, as the API sends it: created, the item added, its text (or
    the call's arguments) word by word, the item done, then ``response.completed`` with usage."""
    (item,) = answer["output"]
    head = answer | {"status": "in_progress", "output": [], "usage": None}
    events: list[Json] = [
        {"type": "response.created", "response": head},
        {"type": "response.in_progress", "response": head},
    ]
    at = {"item_id": item["id"], "output_index": 0}
    if item["type"] == "function_call":
        events.append(
            {"type": "response.output_item.added", "output_index": 0, "item": item | {"arguments": ""}}
        )
        events += [
            {"type": "response.function_call_arguments.delta", **at, "delta": piece}
            for piece in re.findall(r"\S+\s*", item["arguments"])
        ]
        events.append({"type": "response.function_call_arguments.done", **at, "arguments": item["arguments"]})
    else:
        (part,) = item["content"]
        opened = item | {"status": "in_progress", "content": []}
        events.append({"type": "response.output_item.added", "output_index": 0, "item": opened})
        at |= {"content_index": 0}
        events.append({"type": "response.content_part.added", **at, "part": part | {"text": ""}})
        events += [
            {"type": "response.output_text.delta", **at, "delta": word, "logprobs": []}
            for word in re.findall(r"\S+\s*", part["text"])
        ]
        events.append({"type": "response.output_text.done", **at, "text": part["text"], "logprobs": []})
        events.append({"type": "response.content_part.done", **at, "part": part})
    events.append({"type": "response.output_item.done", "output_index": 0, "item": item})
    events.append({"type": "response.completed", "response": answer})
    return [event | {"sequence_number": i} for i, event in enumerate(events)]


# -- Anthropic Messages -------------------------------------------------------------------------


def messages_error_body(code: int, message: str | None = None) -> Json:
    """The JSON Anthropic sends with an error status: ``{"type": "error", "error": {"type", "message"}}``."""
    kind = {
        400: "invalid_request_error",
        401: "authentication_error",
        404: "not_found_error",
        429: "rate_limit_error",
        529: "overloaded_error",
    }.get(code, "api_error")
    text = message or f"scripted {code} {responses.get(code, '')}".strip()
    return {"type": "error", "error": {"type": kind, "message": text}}


def messages_answer(model: str, body: Json, text: str, n: int) -> tuple[int, Json]:
    """The Messages API: ``messages`` (and ``system``) in, one assistant message with its usage out.

    A ``tool_choice`` of ``{"type": "tool", "name": ...}`` is answered with that tool's call,
    its input being ``text`` read as a JSON object. ``stream: true`` gets the event stream.
    """
    messages = body.get("messages")
    if not isinstance(messages, list) or not isinstance(body.get("max_tokens"), int):
        return 400, messages_error_body(400, "'messages' (a list) and 'max_tokens' are required")
    system = body.get("system")
    prompt = [message_text({"content": system}), *(message_text(m) for m in messages)]
    usage = {"input_tokens": sum(len(tokens(t)) for t in prompt), "output_tokens": len(tokens(text))}
    block: Json = {"type": "text", "text": text}
    stop, choice = "end_turn", body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "tool":  # a forced tool call
        block, stop = {"type": "tool_use", "id": f"toolu_{n}", "name": str(choice.get("name"))}, "tool_use"
        block["input"] = _object(text)
    answer = {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [block],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }
    if body.get("stream"):
        return 200, {SSE_EVENTS: _message_events(answer)}
    return 200, answer


def _object(text: str) -> Json:
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {"text": text}


def _message_events(answer: Json) -> list[Json]:
    """A streamed message: its start, one content block word by word, the stop reason and usage."""
    (block,) = answer["content"]
    start = answer | {"content": [], "stop_reason": None, "usage": answer["usage"] | {"output_tokens": 0}}
    if block["type"] == "tool_use":
        opened = block | {"input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
    else:
        opened = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": w} for w in re.findall(r"\S+\s*", block["text"])]
    stopped = {"stop_reason": answer["stop_reason"], "stop_sequence": None}
    spent = {"output_tokens": answer["usage"]["output_tokens"]}
    return [
        {"type": "message_start", "message": start},
        {"type": "content_block_start", "index": 0, "content_block": opened},
        *({"type": "content_block_delta", "index": 0, "delta": delta} for delta in deltas),
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": stopped, "usage": spent},
        {"type": "message_stop"},
    ]


def event_stream(answer: Json) -> bytes:
    """The body of a streamed answer, as server-sent events."""
    if SSE_EVENTS in answer:
        events = answer[SSE_EVENTS]
        return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
    return ("".join(f"data: {json.dumps(event)}\n\n" for event in answer[SSE]) + "data: [DONE]\n\n").encode()
