"""What every SDK traces in the peer benchmark, and how a child process calls it.

The shapes are bench_overhead.py's: ``sync``, ``async`` and ``gen`` (a generator yielding the
answer in five pieces) take a 200-char question and a small dict and return 200 chars;
``chat`` takes the realistic ~10 KB chat history of ``_workload.py`` with its metadata. Each
SDK module (``sdk_<name>.py``) wraps these functions its own way and returns a `Traced`.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # _common, _workload

from _workload import ANSWER, CHAT, CHAT_ANSWER, CHAT_METADATA, CONTEXT, QUESTION

SHAPES = ("sync", "async", "gen", "chat")
ARGUMENTS: dict[str, tuple[Any, Any]] = {
    "sync": (QUESTION, CONTEXT),
    "async": (QUESTION, CONTEXT),
    "gen": (QUESTION, CONTEXT),
    "chat": (CHAT, CHAT_METADATA),
}
# The hand-written pipeline's queue when spans are discarded: bench_overhead.py's, so that no
# variant drops a span in a repeat. Over OTLP every SDK keeps its own defaults.
QUEUE_SIZE = 2048 + 10_000


def plain(question: str, context: dict[str, Any]) -> str:
    return ANSWER


def plain_gen(question: str, context: dict[str, Any]) -> Iterator[str]:
    for i in range(0, 200, 40):
        yield ANSWER[i : i + 40]


async def plain_async(question: str, context: dict[str, Any]) -> str:
    return ANSWER


def chat(messages: list[dict[str, str]], metadata: dict[str, Any]) -> str:
    return CHAT_ANSWER


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sync": plain,
    "async": plain_async,
    "gen": plain_gen,
    "chat": chat,
}


@dataclass(frozen=True)
class Traced:
    """One SDK set up in this process: its traced function per shape, and its flush and shutdown."""

    functions: dict[str, Callable[..., Any]]
    flush: Callable[[], object]
    shutdown: Callable[[], object]


def calls_of(fn: Callable[..., Any], shape: str, calls: int) -> Callable[[], None]:
    """A loop making ``calls`` calls of ``fn`` the way its shape is called."""
    first, second = ARGUMENTS[shape]
    if shape == "gen":

        def run() -> None:
            for _ in range(calls):
                for _item in fn(first, second):
                    pass

    elif shape == "async":

        async def loop() -> None:
            for _ in range(calls):
                await fn(first, second)

        def run() -> None:
            asyncio.run(loop())

    else:

        def run() -> None:
            for _ in range(calls):
                fn(first, second)

    return run
