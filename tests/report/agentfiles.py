"""Trace files of a real traced agent, its runs scored online by a real run evaluator.

`write_weather_runs` runs ``weather``, an ``@tracesim.trace(kind="agent")`` function calling two
``@tracesim.trace(kind="tool")`` functions (and, given the scripted model server, the real
``openai`` client traced by the OpenAI integration), scored by a run evaluator against expected
tool calls (``tracesim.Expected``), configured with a JSON-lines exporter: the file holds what
the scoring pipeline wrote on each agent span.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tracesim
from tracesim.evaluators import Evaluator, ToolNames

EXPECTED = [
    {"name": "lookup", "arguments": {"city": "Warsaw"}},
    {"name": "convert", "arguments": {"celsius": 12.0}},
]


def write_weather_runs(
    path: Path,
    questions: list[str],
    *,
    evaluator: Evaluator | None = None,
    expected: Any = EXPECTED,
    client: Any = None,
    instrument: list[str] | None = None,
) -> None:
    """Trace one ``weather`` run per question into ``path``, each scored by ``evaluator``
    (`ToolNames` by default) against ``expected`` tool calls; a model call first when ``client``
    is given, traced by the integrations named in ``instrument``."""
    tracesim.configure(exporters=["jsonl"], jsonl_path=path, instrument=instrument)
    scorer = evaluator if evaluator is not None else ToolNames()

    @tracesim.trace(kind="tool")
    def lookup(city: str) -> float:
        return 12.0

    @tracesim.trace(kind="tool")
    def convert(celsius: float) -> float:
        if celsius > 100:
            raise ValueError(f"{celsius} C is not a weather")
        return celsius * 1.8 + 32

    @tracesim.trace(kind="agent", evaluators=[scorer], expected=tracesim.Expected(tool_calls=expected))
    def weather(question: str) -> str:
        if client is not None:
            client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
            )
        celsius = lookup("Warsaw")
        if "boiling" in question:
            celsius = 150.0
        if "fahrenheit" in question or "boiling" in question:
            try:
                return f"{convert(celsius):.0f} F"
            except ValueError:
                return "no idea"
        return f"{celsius:.0f} C"

    for question in questions:
        weather(question)
    tracesim.shutdown()  # the results are scored and written before it returns
