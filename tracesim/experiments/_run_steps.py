"""A case's run as the experiment report keeps and shows it: its steps, bounded, and how it
differs from the expected run.

When an evaluator that scores runs (``scores_runs = True``) fails or errors on a case, the row
keeps what it takes to see why without opening the trace: the run's first `MAX_STEPS` steps
(kind, name, tool arguments or the calls an LLM step asked for, error, duration), each value cut
to `MAX_CHARS` characters, and the totals. Only failed runs are kept, so a large dataset that
passes costs nothing. The data is plain JSON-like data: the row's ``to_dict`` holds it as it
is, and the report redacts it with the rest of the row before any view renders it.

`differences` reads an evaluator's details (the missing, extra and mismatched calls, the keys
of arguments, the budget exceeded) into short labelled lines, for the text and HTML views.

Example:
    >>> from tracesim.runs import Run, Step, ToolCall
    >>> call = ToolCall("lookup", {"city": "Berlin"}, output="unknown")
    >>> data = run_data(Run(steps=(Step(kind="tool", name="lookup", tool_call=call, duration_s=0.012),)))
    >>> data["steps"][0]["arguments"], data["steps_total"], data["tool_calls"]
    ('{"city":"Berlin"}', 1, 1)
    >>> step_lines(data)
    ['1. tool lookup {"city":"Berlin"} -> unknown (12.0 ms)']
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from tracesim import runs
from tracesim._capture import dumps
from tracesim._redact import MARGIN, safe_cut
from tracesim._report import format_duration, format_score
from tracesim.runs import Run, Step, ToolCall

__all__ = [
    "DIFFERENCE_KEYS",
    "MAX_CHARS",
    "MAX_STEPS",
    "call_text",
    "differences",
    "expected_calls",
    "failures",
    "run_data",
    "step_lines",
]

MAX_STEPS = 50
"""Steps of a failed run a row keeps (the text view prints the first 20; the JSON and HTML hold all kept)."""
MAX_CHARS = 300
"""Characters kept of each value of a step (arguments, output, error) and of each difference line."""
DIFFERENCE_KEYS = runs.DIFFERENCE_KEYS


def cut(text: str, limit: int = MAX_CHARS) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis marking the cut; a word the cut would split
    (it could be a secret) is left out whole.

    Example:
        >>> cut("the key sk-proj-Abc123Def456Ghi789 opens it", 20)
        'the key …'
    """
    if len(text) <= limit:
        return text
    # never through what could be a secret: the report redacts the row later, and must see it whole
    return text[: safe_cut(text[: limit + 2 * MARGIN], max(limit - 1, 0))] + "…"


def _value(value: Any) -> str:
    return cut(value if isinstance(value, str) else dumps(value))


def call_text(call: ToolCall | Mapping[str, Any]) -> str:
    """A tool call on one line, ``name(arguments as JSON)``, cut to `MAX_CHARS`.

    Example:
        >>> call_text({"name": "lookup", "arguments": {"city": "Warsaw"}})
        'lookup({"city":"Warsaw"})'
    """
    return runs.call_text(call, MAX_CHARS)


def run_data(run: Run, failed: list[str] | None = None) -> dict[str, Any]:
    """The run as a row keeps it: its first `MAX_STEPS` steps, values cut, its totals, and the
    names of the evaluators that failed on it (``failed``)."""
    truncated = (run.truncated_reason or "cut short") if run.truncated else None
    return {
        "failed": list(failed or ()),
        "steps": [_step_data(step) for step in run.steps[:MAX_STEPS]],
        "steps_total": len(run.steps),
        "tool_calls": len(run.tool_calls),
        "llm_calls": run.llm_calls,
        "truncated": truncated,
        "duration_s": run.duration_s,
    }


def _step_data(step: Step) -> dict[str, Any]:
    data: dict[str, Any] = {"kind": step.kind, "name": cut(step.name), "depth": step.depth}
    if step.tool_call is not None:
        data["arguments"] = cut(dumps(step.tool_call.arguments))
        if step.tool_call.output is not None:
            data["output"] = _value(step.tool_call.output)
    if step.requested:
        data["requested"] = [call_text(call) for call in step.requested[:10]]
    if step.error is not None:
        data["error"] = cut(step.error)
    if step.duration_s is not None and math.isfinite(step.duration_s):
        data["duration_s"] = step.duration_s
    return data


def step_lines(data: Mapping[str, Any], limit: int | None = None) -> list[str]:
    """The kept steps of a run (`run_data`), one line each, indented by depth, then what was left out.

    Example:
        >>> data = {"steps": [{"kind": "llm", "name": "chat", "depth": 1, "requested": ["lookup({})"]},
        ...                   {"kind": "tool", "name": "lookup", "depth": 2, "error": "KeyError: 'x'"}],
        ...         "steps_total": 3}
        >>> step_lines(data, limit=2)
        ['1. llm chat asked for lookup({})', "  2. tool lookup error: KeyError: 'x'", '... 1 more step']
    """
    steps = data.get("steps")
    steps = steps if isinstance(steps, list) else []
    shown = steps if limit is None else steps[:limit]
    depths = [d for s in shown if isinstance(s, Mapping) and isinstance(d := s.get("depth"), int)]
    top: int = min(depths, default=1)
    lines = []
    for number, step in enumerate(shown, 1):
        if not isinstance(step, Mapping):
            continue
        depth = step.get("depth")
        indent = "  " * min(max((depth if isinstance(depth, int) else top) - top, 0), 8)
        lines.append(f"{indent}{number}. {step_text(step)}")
    total = data.get("steps_total")
    left = (total if isinstance(total, int) else len(steps)) - len(shown)
    if left > 0:
        lines.append(f"... {left} more step{'s' if left != 1 else ''}")
    truncated = data.get("truncated")
    if truncated:
        lines.append(f"(the run was cut short: {truncated})")
    return lines


def step_text(step: Mapping[str, Any]) -> str:
    """One step on one line: kind, name, arguments (or the calls asked for), output, error, duration.

    Example:
        >>> step_text({"kind": "tool", "name": "lookup", "arguments": '{"city":"Paris"}', "duration_s": 1.5})
        'tool lookup {"city":"Paris"} (1.50 s)'
    """
    parts = [str(step.get("kind", "span")), str(step.get("name", ""))]
    if step.get("arguments") is not None:
        parts.append(str(step["arguments"]))
    requested = step.get("requested")
    if isinstance(requested, list) and requested:
        parts.append("asked for " + ", ".join(map(str, requested)))
    if step.get("output") is not None:
        parts.append(f"-> {step['output']}")
    if step.get("error") is not None:
        parts.append(f"error: {step['error']}")
    duration = step.get("duration_s")
    text = " ".join(parts)
    if isinstance(duration, (int, float)) and not isinstance(duration, bool):
        text += f" ({format_duration(float(duration))})"
    return text


def expected_calls(expected: Any) -> str | None:
    """The tool calls a case expects, on one line (None when it expects none), from a
    `tracesim.Expected` or its report data (``{"output": ..., "tool_calls": [...]}``).

    Example:
        >>> expected_calls({"output": "12 C", "tool_calls": [{"name": "lookup", "arguments": {}}]})
        'lookup({})'
        >>> expected_calls("12 C") is None
        True
    """
    from tracesim.experiments._case import expected_data

    data = expected_data(expected)
    calls = data.get("tool_calls") if isinstance(data, Mapping) else None
    if not isinstance(calls, list):
        return None
    return runs.calls_text(calls, limit=MAX_CHARS)


def differences(details: Any) -> list[tuple[str, str]]:
    """How a run differs from the expected one (`tracesim.runs.differences`), each line cut to
    `MAX_CHARS`.

    Example:
        >>> differences({"extra": {"convert": 2}, "partial": []})
        [('extra', 'convert ×2')]
    """
    return runs.differences(details, limit=MAX_CHARS)


def failures(row: Any) -> tuple[str, list[tuple[str, list[tuple[str, str]]]]]:
    """What the views show of a row whose run failed: its counts (``3 tool calls, 2 LLM calls``),
    then each failed run evaluator's line (``name failed, score S: why``) with its `differences`.

    Example:
        >>> from types import SimpleNamespace
        >>> from tracesim.evaluators import EvalResult
        >>> result = EvalResult(name="tool_names", score=0.0, passed=False, details={"extra": {"lookup": 1}})
        >>> row = SimpleNamespace(run={"tool_calls": 2, "llm_calls": 3, "failed": ["tool_names"]},
        ...                       scores={"tool_names": result})
        >>> failures(row)
        ('2 tool calls, 3 LLM calls', [('tool_names failed, score 0.000', [('extra', 'lookup ×1')])])
    """
    run = row.run or {}
    counts = f"{run.get('tool_calls', 0)} tool calls, {run.get('llm_calls', 0)} LLM calls"
    found = []
    names = run.get("failed")
    for name in names if isinstance(names, list) else []:
        result = row.scores.get(name)
        if result is None:
            continue
        verdict = "error" if result.status == "error" else "failed"
        reason = result.error if result.status == "error" else result.explanation
        line = f"{name} {verdict}, score {format_score(result.score)}" + (f": {reason}" if reason else "")
        found.append((line, differences(result.details)))
    return counts, found
