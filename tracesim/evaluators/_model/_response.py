"""Reading a model's answer: a capped body, its JSON, and the fields evaluators use, read defensively.

The body is read chunk by chunk and reading stops past ``max_response_bytes``, so a server that
sends far more than the ``max_tokens`` asked for costs a bounded amount of memory. Fields are
read from the JSON as plain data (not the ``openai`` client's models): a field of the wrong
type is an error of the response, and token counts that are not counts are dropped with a
note, never at the cost of a valid answer.

Example:
    >>> usage = {}
    >>> read_usage({"prompt_tokens": 12, "completion_tokens": "lots"}, usage)
    ['completion_tokens']
    >>> usage
    {'prompt_tokens': 12}
"""

from __future__ import annotations

import array
import base64
import json
import math
import sys
from typing import Any

__all__ = [
    "MIB",
    "BadResponse",
    "TooLarge",
    "chat_answer",
    "default_max_bytes",
    "embeddings",
    "read_json",
    "read_usage",
]

MIB = 1 << 20
_BYTES_PER_TOKEN = 64  # a token is about 4 characters; JSON escapes, tool calls and metadata fit in 64
_BYTES_PER_EMBEDDING = 256 * 1024  # a 3,072-dimension vector as JSON floats is about 70 KB
_USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")


class BadResponse(ValueError):
    """A body that is not the JSON answer expected (retried, like a server error)."""


class TooLarge(Exception):
    """A body longer than ``max_response_bytes`` (not retried: it would come back as long)."""

    def __init__(self, limit: int, seen: int, declared: bool) -> None:
        how = "declares" if declared else "passed"
        super().__init__(f"the response body {how} {seen:,} bytes, over max_response_bytes={limit:,}")
        self.limit = limit


def default_max_bytes(max_tokens: Any = None, texts: int = 0) -> int:
    """The body cap when ``max_response_bytes`` is not set: 1 MiB, or more for long answers.

    64 bytes per ``max_tokens`` of a chat answer, 256 KiB per embedded text.

    Example:
        >>> default_max_bytes(400), default_max_bytes(100_000), default_max_bytes(texts=8)
        (1048576, 6400000, 2097152)
    """
    tokens = max_tokens if isinstance(max_tokens, int) and not isinstance(max_tokens, bool) else 0
    return max(MIB, _BYTES_PER_TOKEN * tokens, _BYTES_PER_EMBEDDING * texts)


async def read_json(response: Any, limit: int) -> Any:
    """The JSON body of an unread ``httpx`` response, read until ``limit`` bytes at most."""
    declared = response.headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > limit:
        raise TooLarge(limit, int(declared), declared=True)
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise TooLarge(limit, size, declared=False)
        chunks.append(chunk)
    try:
        return json.loads(b"".join(chunks))
    except (ValueError, RecursionError) as exc:
        raise BadResponse(f"the response body is not JSON ({type(exc).__name__}: {str(exc)[:200]})") from None


def chat_answer(data: Any) -> dict[str, Any]:
    """``{"content", "arguments", "finish_reason"}`` of a chat completion (``arguments``: a tool call's)."""
    choices = data.get("choices") if isinstance(data, dict) else None
    choice = choices[0] if isinstance(choices, list) and choices else None
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise BadResponse("no choices[0].message in the response")
    calls = message.get("tool_calls")
    arguments = None
    if isinstance(calls, list) and calls:
        function = calls[0].get("function") if isinstance(calls[0], dict) else None
        arguments = function.get("arguments") if isinstance(function, dict) else None
        if not isinstance(arguments, str):
            raise BadResponse("tool_calls[0].function.arguments is not text")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise BadResponse(f"message.content is a {type(content).__name__}, not text")
    reason = choice.get("finish_reason") if isinstance(choice, dict) else None
    return {"content": content, "arguments": arguments, "finish_reason": reason}


def embeddings(data: Any, count: int) -> list[list[float]]:
    """The ``count`` vectors of an embeddings response, in input order (floats or base64 float32)."""
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise BadResponse("no data list in the embeddings response")
    if len(items) != count:
        raise BadResponse(f"{len(items)} embeddings for {count} texts")
    ordered = sorted(items, key=lambda item: item.get("index") if isinstance(item.get("index"), int) else 0)
    return [_vector(item.get("embedding")) for item in ordered]


def _vector(value: Any) -> list[float]:
    if isinstance(value, str):  # what the client asks for: little-endian float32, base64
        floats = array.array("f")
        try:
            floats.frombytes(base64.b64decode(value, validate=True))
        except ValueError as exc:
            raise BadResponse(f"an embedding is not base64 float32 ({exc})") from None
        if sys.byteorder == "big":
            floats.byteswap()
        return list(floats)
    if isinstance(value, list) and all(type(x) in (int, float) for x in value):
        return [float(x) for x in value]
    raise BadResponse("an embedding is neither a list of numbers nor base64")


def read_usage(reported: Any, into: dict[str, int]) -> list[str]:
    """Put the token counts of ``reported`` into ``into``; return the fields dropped as unreadable.

    A count is a whole number >= 0 (``12`` or ``12.0``); NaN, text, negatives and the like
    are dropped rather than guessed.
    """
    if reported is None:
        return []
    if not isinstance(reported, dict):
        return ["usage"]
    dropped: list[str] = []
    for field in _USAGE_FIELDS:
        value = reported.get(field)
        if value is None:
            continue
        count = _count(value)
        if count is None:
            dropped.append(field)
        else:
            into[field] = count
    return dropped


def _count(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float) and math.isfinite(value) and value >= 0 and value.is_integer():
        return int(value)
    return None
