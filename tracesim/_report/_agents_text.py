"""The agents' runs in the terminal: ``tracesim report``'s table of agents, their tools and their
worst runs, and the steps ``tracesim show`` lists under a run evaluator's failed result."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from tracesim import _semconv as sc
from tracesim._pricing import PriceTable, format_usd
from tracesim._report._agents import agent_name, is_run_result, one_line, run_steps, step_text
from tracesim._report._format import DASH, format_count, format_duration, format_rate, format_score
from tracesim._report._report_data import AgentStats, Report, RunCase
from tracesim._report._tables import print_table
from tracesim._runs import RunIndex
from tracesim._terminal import visible
from tracesim.runs import calls_text, differences
from tracesim.tracefile import SpanRecord

__all__ = [
    "SHOW_STEPS",
    "STEPS_SHOWN",
    "agent_cells",
    "agent_cost",
    "agent_headings",
    "failed_runs",
    "print_agents",
    "run_head",
]

STEPS_SHOWN = 10
"""Steps of a worst run printed in the terminal (``--json`` and ``--html`` hold up to 20)."""
SHOW_STEPS = 20
"""Steps of a failed run ``tracesim show`` lists by default (``--steps``)."""
_CHARS = 80


def print_agents(report: Report, console: Console) -> None:
    """Print the agents table, their tools and their worst runs, when the files hold agents.

    Example:
        >>> from tracesim._report import summarize
        >>> print_agents(summarize([]), Console())
    """
    if not report.agents:
        return
    grouped = report.group_by is not None
    table = Table(title="Agents (each agent span's run: the spans under it)", title_justify="left")
    if grouped:
        table.add_column(_cell(report.group_by or ""), overflow="fold")
    table.add_column("agent", overflow="fold")
    llm = any(agent.llm_calls_mean for agent in report.agents)
    for heading in agent_headings(llm):
        table.add_column(heading, justify="right")
    for agent in report.agents:
        cells = [agent.name, *agent_cells(agent, llm)]
        table.add_row(*(_cell(c) for c in ([agent.group or ""] if grouped else []) + cells))
    print_table(console, table)
    tools = Table(title="Tools (per agent)", title_justify="left")
    for heading in ("agent", "tool"):
        tools.add_column(heading, overflow="fold")
    for heading in ("calls", "errors", "error rate", "p95"):
        tools.add_column(heading, justify="right")
    for agent in report.agents:
        for tool in agent.tools:
            tools.add_row(
                *(
                    _cell(c)
                    for c in (
                        agent.name,
                        tool.name,
                        format_count(tool.calls),
                        format_count(tool.errors),
                        format_rate(tool.error_rate),
                        format_duration(tool.p95_s),
                    )
                )
            )
    if tools.rows:
        print_table(console, tools)
    for agent in report.agents:
        _print_worst(agent, console)


def agent_headings(llm: bool) -> list[str]:
    """The number columns of the agents table; those of LLM calls only when a run made one."""
    headings = ["runs", "errors", "error rate", "p50", "p95", "tool calls/run", "p95 tool calls"]
    return headings + (["LLM calls/run", "tokens/run", "cost/run"] if llm else [])


def agent_cells(agent: AgentStats, llm: bool) -> list[str]:
    """The cells under `agent_headings`."""
    cells = [
        format_count(agent.runs),
        format_count(agent.errors),
        format_rate(agent.error_rate),
        format_duration(agent.duration_p50_s),
        format_duration(agent.duration_p95_s),
        f"{agent.tool_calls_mean:.1f}",
        f"{agent.tool_calls_p95:g}",
    ]
    if llm:
        cells += [f"{agent.llm_calls_mean:.1f}", f"{agent.tokens_mean:,.0f}", agent_cost(agent)]
    return cells


def agent_cost(agent: AgentStats) -> str:
    """The mean cost per run, saying over how many runs when some had no price."""
    if agent.cost_usd_mean is None:
        return DASH
    cost = format_usd(agent.cost_usd_mean)
    return cost if agent.priced_runs == agent.runs else f"{cost} ({agent.priced_runs} of {agent.runs} runs)"


def run_head(case: RunCase) -> str:
    """What a worst run is: its verdict, trace, duration, calls, tokens and cost, on one line.

    Example:
        >>> case = RunCase("weather", "ab" * 16, "cd" * 8, "tool_names", 0.5, False, None, None, 0.25,
        ...                2, 1, 120, None, False, (), 0)
        >>> for part in run_head(case).split("  "):
        ...     print(part)
        ✗ tool_names 0.500
        trace abababababababababababababababab
        250.0 ms
        2 tool calls, 1 LLM call, 120 tokens
    """
    parts = []
    if case.evaluator is not None:
        mark = "✓" if case.passed is True else "✗" if case.passed is False else "·"
        parts.append(
            f"{mark} {case.evaluator}" + (f" {format_score(case.score)}" if case.score is not None else "")
        )
    parts.append(f"trace {case.trace_id}")
    parts.append(format_duration(case.duration_s))
    counts = f"{format_count(case.tool_calls)} tool call{'s' * (case.tool_calls != 1)}"
    if case.llm_calls:  # a file without LLM calls reads as before: no LLM, no tokens, no dollars
        counts += f", {format_count(case.llm_calls)} LLM call{'s' * (case.llm_calls != 1)}"
        counts += f", {format_count(case.tokens)} tokens"
    if case.cost_usd is not None:
        counts += f", {format_usd(case.cost_usd)}"
    parts.append(counts)
    if case.error:
        parts.append(f"ERROR {case.error}")
    if case.truncated:
        parts.append("(run cut short)")
    return "  ".join(parts)


def _print_worst(agent: AgentStats, console: Console) -> None:
    if not agent.worst_runs:
        return
    where = f" [{agent.group}]" if agent.group is not None else ""
    title = (
        f"Worst runs of {agent.name}{where} (up to {len(agent.worst_runs)}; --json or --html for more steps)"
    )
    console.print(Text(visible(title)), soft_wrap=True)
    for case in agent.worst_runs:
        console.print(Text(visible(run_head(case)), style="bold"), soft_wrap=True)
        if case.explanation:
            console.print(Text(visible(f"   why: {one_line(case.explanation, _CHARS)}")), soft_wrap=True)
        for number, step in enumerate(case.steps[:STEPS_SHOWN], start=1):
            cost = format_usd(step.cost_usd) if step.cost_usd is not None else None
            console.print(Text("   " + step_text(step, number, width=_CHARS, cost=cost)), soft_wrap=True)
        more = case.more_steps + max(len(case.steps) - STEPS_SHOWN, 0)
        if more:
            console.print(Text(f"   ... and {format_count(more)} more"), soft_wrap=True)


def _cell(text: str) -> Text:
    return Text(visible(text))


def failed_runs(
    spans: Sequence[SpanRecord],
    *,
    steps: int = SHOW_STEPS,
    width: int = 100,
    prices: PriceTable | None = None,
) -> dict[str, list[str]]:
    """For ``tracesim show``: the steps of each run a run evaluator failed, as lines, by trace id.

    A failed (or errored) result of a run evaluator (`is_run_result`) on a span, or on a carrier
    linked to it, lists that span's run rebuilt from ``spans`` (already redacted: names,
    arguments and errors are shown as they are): a head line, then at most ``steps`` steps and
    ``... and K more``. Values are cut at ``width``; LLM steps priced with ``prices``.

    Example:
        >>> from tracesim.tracefile import SpanRecord
        >>> from tracesim.tracefile._span_records import EventRecord
        >>> tid = "0" * 31 + "1"
        >>> failed = EventRecord("gen_ai.evaluation.result", 5, {"gen_ai.evaluation.name": "tool_names",
        ...     "gen_ai.evaluation.score.value": 0.5, "tracesim.evaluation.passed": False})
        >>> agent = SpanRecord(tid, "0" * 15 + "1", None, "agent", "INTERNAL", 0, 10**6,
        ...                    {"openinference.span.kind": "AGENT"}, (failed,))
        >>> tool = SpanRecord(tid, "0" * 15 + "2", "0" * 15 + "1", "lookup", "INTERNAL", 0, 10**5,
        ...     {"openinference.span.kind": "TOOL", "gen_ai.tool.call.arguments": '{"city": "Warsaw"}'})
        >>> print("\\n".join(failed_runs([agent, tool])[tid]))
        run of agent  ✗ tool_names 0.500  1 tool call  1 step:
           1. tool lookup {"city": "Warsaw"}  100 µs
    """
    by_id = {(span.trace_id, span.span_id): span for span in spans}
    targets: dict[tuple[str, str], list[str]] = {}
    whys: dict[tuple[str, str], list[str]] = {}  # each failed result's explanation
    for span in spans:
        carrier = span.attributes.get(sc.SPAN_KIND) == "EVALUATOR" and len(span.links) == 1
        target = by_id.get((span.links[0].trace_id, span.links[0].span_id)) if carrier else span
        if target is None:
            continue
        for event in span.event(sc.EVALUATION_EVENT):
            attributes = event.attributes
            if is_run_result(attributes) and _failed(attributes):
                targets.setdefault((target.trace_id, target.span_id), []).append(_verdict(attributes))
                explanation = attributes.get(sc.EVALUATION_EXPLANATION)
                if not isinstance(explanation, str) or not explanation:  # the differences its details name
                    explanation = "; ".join(f"{label} {text}" for label, text in _differences(attributes))
                if explanation:
                    name = visible(str(attributes.get(sc.EVALUATION_NAME)))
                    whys.setdefault((target.trace_id, target.span_id), []).append(
                        f"   why ({name}): {one_line(visible(explanation), width)}"
                    )
    if not targets:
        return {}
    index = RunIndex(spans)
    lines: dict[str, list[str]] = {}
    for key, verdicts in targets.items():
        target = by_id[key]
        run = index.run(target, prices=prices)
        shown, more = run_steps(run, steps)
        count = len(run.tool_calls)
        head = [
            f"run of {visible(agent_name(target))}",
            *sorted(verdicts),
            f"{count} tool call{'s' * (count != 1)}",
            f"{len(run.steps)} step{'s' * (len(run.steps) != 1)}:",
        ]
        if run.truncated and run.truncated_reason:
            head.insert(-1, f"cut short ({visible(run.truncated_reason)})")
        out = lines.setdefault(target.trace_id, [])
        out.append("  ".join(head))
        wanted = _expected_calls(target.attributes.get(sc.EXPECTED_TOOL_CALLS))
        if wanted is not None:
            out.append(f"   expected: {one_line(visible(wanted), width)}")
        out.extend(sorted(whys.get(key, ())))
        for number, step in enumerate(shown, start=1):
            cost = format_usd(step.cost_usd) if step.cost_usd is not None else None
            out.append("   " + step_text(step, number, width=width, cost=cost))
        if more:
            out.append(f"   ... and {format_count(more)} more")
    return lines


def _differences(attributes: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The missing, extra and mismatched calls a result's details name (`tracesim.runs.differences`)."""
    raw = attributes.get(sc.EVALUATION_DETAILS)
    try:
        details = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return []
    return differences(details)


def _expected_calls(raw: Any) -> str | None:
    """The expected tool calls a span recorded (``tracesim.expected.tool_calls``), on one line."""
    try:
        calls = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None
    return calls_text(calls) if isinstance(calls, list) else None


def _failed(attributes: Mapping[str, Any]) -> bool:
    """A result that failed its threshold, or an evaluator that raised (as ``show --failed`` reads it)."""
    status = attributes.get(sc.EVALUATION_STATUS)
    if status not in ("ok", "skipped", "error"):
        status = "error" if sc.ERROR_TYPE in attributes else "ok"
    return status == "error" or (status == "ok" and attributes.get(sc.EVALUATION_PASSED) is False)


def _verdict(attributes: Mapping[str, Any]) -> str:
    name = visible(str(attributes.get(sc.EVALUATION_NAME)))
    if attributes.get(sc.EVALUATION_STATUS) == "error" or sc.ERROR_TYPE in attributes:
        return f"! {name} error"
    score = attributes.get(sc.EVALUATION_SCORE_VALUE)
    shown = (
        f" {format_score(score)}" if isinstance(score, (int, float)) and not isinstance(score, bool) else ""
    )
    return f"✗ {name}{shown}"
