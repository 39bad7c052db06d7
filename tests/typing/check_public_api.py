"""Type-checked only (mypy --strict, in `make typecheck`): the public API keeps user types.

Each ``assert_type`` pins what a type checker sees; each ``type: ignore[...]`` pins an error
it must keep reporting (``warn_unused_ignores`` fails the check if the error disappears).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

from typing_extensions import assert_type

import tracesim
from tracesim.evaluators import EvalResult, Levenshtein, evaluator
from tracesim.runs import ToolCall
from tracesim.testing import CapturedSpans, capture_spans


@tracesim.trace
def bare(question: str, top_k: int = 3) -> list[str]:
    return [question] * top_k


@tracesim.trace(kind="agent", evaluators=[Levenshtein()], expected="x")
def configured(question: str) -> str:
    return question


@tracesim.trace
async def fetch(url: str) -> bytes:
    return url.encode()


@tracesim.trace
def stream(n: int) -> Iterator[str]:
    yield from map(str, range(n))


@tracesim.trace
async def astream(n: int) -> AsyncIterator[int]:
    for i in range(n):
        yield i


class Agent:
    @tracesim.trace
    def run(self, question: str) -> str:
        return question

    @classmethod
    @tracesim.trace
    def build(cls, name: str) -> Agent:
        return cls()


@evaluator(threshold=0.5)
def mentions_paris(output: str, expected: str) -> float:
    return float("paris" in output.lower())


@tracesim.trace(
    kind="agent",
    evaluators=[Levenshtein()],
    expected=tracesim.Expected(output="x", tool_calls=[ToolCall("search", {"q": "x"})]),
)
def expects_tool_calls(question: str) -> str:
    return question


async def check_async() -> None:
    assert_type(await fetch("https://a"), bytes)
    async for item in astream(2):
        assert_type(item, int)


def check() -> None:
    assert_type(bare("q"), list[str])
    assert_type(bare("q", top_k=1), list[str])
    bare(1)  # type: ignore[arg-type]
    bare("q", top=1)  # type: ignore[call-arg]
    assert_type(configured("q"), str)
    assert_type(expects_tool_calls("q"), str)
    assert_type(tracesim.Expected(tool_calls=[ToolCall("a")]), tracesim.Expected)
    assert_type(tracesim.Expected(tool_calls=[{"name": "a", "arguments": {"q": 1}}]), tracesim.Expected)
    with tracesim.expect(tracesim.Expected(output="x")):
        pass
    assert_type(stream(3), Iterator[str])
    assert_type(Agent().run("q"), str)
    assert_type(Agent.build("n"), Agent)
    with tracesim.span("block", kind="tool", input={"a": 1}) as s:
        assert_type(s, tracesim.Span)
        s.set_output("done")
    assert_type(tracesim.current_span(), tracesim.Span)
    assert_type(tracesim.force_flush(1.0), bool)
    assert_type(tracesim.scoring_stats(), tracesim.ScoringStats)
    assert_type(Levenshtein().evaluate("a", "b"), EvalResult)
    assert_type(mentions_paris.evaluate("Paris", "Paris"), EvalResult)
    with capture_spans() as captured:
        assert_type(captured, CapturedSpans)
    tracesim.configure(max_value_chars="big")  # type: ignore[arg-type]
