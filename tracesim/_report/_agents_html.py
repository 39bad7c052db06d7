"""The agents' runs on the HTML page: the agents table, their tools, and their worst runs' steps.

Every text from the trace files (agent, tool, evaluator and model names, arguments, errors) is
escaped through `html_text`, as in the rest of the page.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracesim._pricing import format_usd
from tracesim._report._agents_text import agent_cells, agent_headings, run_head
from tracesim._report._format import DASH, format_count, format_duration, format_rate, html_text
from tracesim._report._report_data import AgentStats, Report, RunCase, RunStep

__all__ = ["agents_section"]


def agents_section(report: Report) -> str:
    """The ``<section id="agents">`` of the page; empty when the files hold no agent span.

    Example:
        >>> from tracesim._report import summarize
        >>> agents_section(summarize([]))
        ''
    """
    if not report.agents:
        return ""
    grouped = report.group_by is not None
    llm = any(a.llm_calls_mean for a in report.agents)
    heads = [*([report.group_by or ""] if grouped else []), "agent", *agent_headings(llm)]
    rows = [[*([a.group or ""] if grouped else []), a.name, *agent_cells(a, llm)] for a in report.agents]
    first_number = 2 if grouped else 1
    parts = [
        '<section id="agents"><h2>Agents</h2><p class="note">Each agent span\'s run: the spans under it, '
        "its tool calls counted as run evaluators count them (a call the model requested and the tool "
        "span that executed it count once).</p>",
        _table(heads, rows, first_number),
    ]
    tools = [
        [
            a.name,
            t.name,
            format_count(t.calls),
            format_count(t.errors),
            format_rate(t.error_rate),
            format_duration(t.p95_s),
        ]
        for a in report.agents
        for t in a.tools
    ]
    if tools:
        parts.append("<h3>Tools</h3>")
        parts.append(_table(["agent", "tool", "calls", "errors", "error rate", "p95"], tools, 2))
    worst = [_worst(agent) for agent in report.agents if agent.worst_runs]
    if worst:
        parts.append(
            '<h3>Worst runs</h3><p class="note">Per agent: runs a run evaluator failed (lowest score '
            "first), then runs with an error, then the lowest scored, then the slowest.</p>"
        )
        parts.extend(worst)
    parts.append("</section>")
    return "".join(parts)


def _worst(agent: AgentStats) -> str:
    where = f" · {agent.group}" if agent.group is not None else ""
    runs = "".join(_run(case) for case in agent.worst_runs)
    return f'<div class="worst-runs"><h4>{html_text(agent.name + where)}</h4>{runs}</div>'


def _run(case: RunCase) -> str:
    llm = any(step.input_tokens is not None or step.output_tokens is not None for step in case.steps)
    rows = [_step_row(number, step, llm) for number, step in enumerate(case.steps, start=1)]
    more = ""
    if case.more_steps:
        more = f'<p class="note">... and {format_count(case.more_steps)} more</p>'
    heads = [
        "#",
        "kind",
        "name",
        "arguments",
        "error",
        "duration",
        *(["model", "tokens", "cost"] if llm else []),
    ]
    head = "".join(f"<th>{html_text(h)}</th>" for h in heads)
    table = (
        f'<div class="scroll"><table class="run-steps"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )
    verdict = "fail" if case.passed is False else "pass" if case.passed is True else ""
    why = f'<p class="note">why: {html_text(case.explanation)}</p>' if case.explanation else ""
    return f'<p class="run {verdict}">{html_text(run_head(case))}</p>{why}{table}{more}'


def _step_row(number: int, step: RunStep, llm: bool) -> str:
    tokens = DASH
    if step.input_tokens is not None or step.output_tokens is not None:
        shown = [format_count(n) if n is not None else "?" for n in (step.input_tokens, step.output_tokens)]
        tokens = f"{shown[0]}→{shown[1]}"
    arguments = step.arguments
    if arguments is None and step.requested:
        arguments = "requested " + ", ".join(step.requested)
    indent = "\u00a0\u00a0" * (max(step.depth, 1) - 1)
    cells = [
        f'<td class="n">{number}</td>',
        f"<td>{html_text(step.kind)}</td>",
        f"<td>{indent}{html_text(step.name)}</td>",
        f'<td class="text">{html_text(arguments or DASH)}</td>',
        f'<td class="text fail">{html_text(step.error)}</td>' if step.error else f"<td>{DASH}</td>",
        f'<td class="n">{format_duration(step.duration_s)}</td>',
    ]
    if llm:
        cells += [
            f"<td>{html_text(step.model or DASH)}</td>",
            f'<td class="n">{tokens}</td>',
            f'<td class="n">{format_usd(step.cost_usd, DASH)}</td>',
        ]
    return "<tr>" + "".join(cells) + "</tr>"


def _table(heads: Sequence[str], rows: Sequence[Sequence[str]], first_number: int) -> str:
    def cls(i: int) -> str:
        return ' class="n"' if i >= first_number else ""

    head = "".join(f"<th{cls(i)}>{html_text(h)}</th>" for i, h in enumerate(heads))
    body = "".join(
        "<tr>" + "".join(f"<td{cls(i)}>{html_text(c)}</td>" for i, c in enumerate(row)) + "</tr>"
        for row in rows
    )
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'
