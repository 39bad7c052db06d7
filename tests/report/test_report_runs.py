"""``tracesim report``: each agent's runs (tool calls, per-tool counts, LLM use, worst runs), in
text, JSON and HTML, from files written by a real traced agent scored online (see `agentfiles`)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from secret_kinds import leaked

from tracesim import _semconv as sc
from tracesim._report import print_report, read_report, render_html
from tracesim.cli import main

from .agentfiles import write_weather_runs
from .chromium import CHROMIUM, INSTALL, Page
from .test_html import check_structure
from .tracefiles import TraceWriter

QUESTIONS = ["Warsaw in fahrenheit?", "Warsaw in celsius?", "boiling in Warsaw?"]


@pytest.fixture
def weather_file(tmp_path: Path) -> Path:
    """Three runs of ``weather`` scored by tool_names: the celsius run misses ``convert`` (fails),
    the boiling run calls it and it raises (fails: tool_names counts calls that succeeded)."""
    path = tmp_path / "traces.jsonl"
    write_weather_runs(path, QUESTIONS)
    return path


def _json(path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["report", str(path), "--json", *args]) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


def test_the_json_document_has_each_agents_runs_tools_and_worst_runs(
    weather_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = _json(weather_file, capsys)
    assert list(document)[-2:] == ["agents", "gates"]  # the new key, before the gates the CLI adds
    (agent,) = document["agents"]
    assert (agent["name"], agent["group"], agent["runs"], agent["errors"]) == ("weather", None, 3, 0)
    assert agent["tool_calls"] == 5
    assert agent["tool_calls_mean"] == pytest.approx(5 / 3)
    assert agent["tool_calls_p95"] == 2.0
    assert (agent["llm_calls_mean"], agent["tokens_mean"], agent["cost_usd_mean"]) == (0.0, 0.0, None)
    tools = [(t["name"], t["calls"], t["errors"], t["error_rate"]) for t in agent["tools"]]
    assert tools == [("lookup", 3, 0, 0.0), ("convert", 2, 1, 0.5)]
    assert all(t["p95_s"] > 0 for t in agent["tools"])
    worst = agent["worst_runs"]
    # both failed runs scored 0: the one with a failed step first, then the other; then the passing one
    assert [(w["evaluator"], w["score"], w["passed"]) for w in worst] == [
        ("tool_names", 0.0, False),
        ("tool_names", 0.0, False),
        ("tool_names", 1.0, True),
    ]
    boiling, celsius, fahrenheit = worst
    assert [(s["kind"], s["name"], s["arguments"]) for s in boiling["steps"]] == [
        ("tool", "lookup", '{"city": "Warsaw"}'),
        ("tool", "convert", '{"celsius": 150.0}'),
    ]
    assert boiling["steps"][1]["error"] == "ValueError: 150.0 C is not a weather"
    assert boiling["explanation"] == "missing 'convert' x1"  # tool_names counts calls that succeeded
    assert boiling["steps"][0]["error"] is None
    assert boiling["steps"][0]["duration_s"] > 0
    assert [s["name"] for s in celsius["steps"]] == ["lookup"]
    assert (celsius["tool_calls"], celsius["more_steps"], celsius["truncated"]) == (1, 0, False)
    assert fahrenheit["tool_calls"] == 2
    assert len({w["trace_id"] for w in worst}) == 3


def test_the_text_report_prints_the_agents_their_tools_and_their_worst_runs(
    weather_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(weather_file)]) == 0
    out = capsys.readouterr().out
    lines = [line.rstrip() for line in out.splitlines()]
    agents = lines.index("Agents (each agent span's run: the spans under it)")
    row = next(line for line in lines[agents:] if line.startswith("│ weather"))
    assert [c.strip() for c in row.split("│")[1:-1]][:3] + [c.strip() for c in row.split("│")[1:-1]][-2:] == [
        "weather", "3", "0", "1.7", "2",
    ]  # fmt: skip
    assert any(line.startswith("│ weather │ convert │     2 │      1 │      50.0% │") for line in lines)
    worst = lines.index("Worst runs of weather (up to 3; --json or --html for more steps)")
    assert lines[worst + 1].startswith("✗ tool_names 0.000  trace ")
    assert lines[worst + 2] == "   why: missing 'convert' x1"
    assert lines[worst + 3].startswith('   1. tool lookup {"city": "Warsaw"}  ')
    assert lines[worst + 4].startswith(
        '   2. tool convert {"celsius": 150.0}  ERROR ValueError: 150.0 C is not a weather  '
    )
    assert "LLM" not in out  # no model call in these runs: no LLM columns


def test_runs_with_model_calls_count_llm_calls_tokens_and_cost(
    llm_server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("opentelemetry.instrumentation.genai.openai", reason="needs the 'openai' extra")
    import openai

    from tracesim.integrations import uninstrument_openai

    llm_server.model = "gpt-4o-mini-2024-07-18"
    llm_server.judge = lambda request: "Warsaw."
    path = tmp_path / "traces.jsonl"
    client = openai.OpenAI(base_url=llm_server.base_url, api_key="test", max_retries=0)
    try:
        write_weather_runs(path, QUESTIONS[:2], client=client, instrument=["openai"])
    finally:
        client.close()
        uninstrument_openai()
    (agent,) = _json(path, capsys)["agents"]
    assert agent["llm_calls_mean"] == 1.0
    assert agent["tokens_mean"] == 3 + 1  # "Warsaw in ...?" in, "Warsaw." out: the server counts words
    assert agent["priced_runs"] == 2
    assert agent["cost_usd_mean"] == pytest.approx(1.05e-6)  # (3 x 0.15 + 1 x 0.60) / 1M
    steps = agent["worst_runs"][0]["steps"]
    first = steps[0]
    assert (first["kind"], first["model"], first["input_tokens"], first["output_tokens"]) == (
        "llm", "gpt-4o-mini-2024-07-18", 3, 1,
    )  # fmt: skip
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    assert "LLM calls/run" in out
    assert "1. llm chat gpt-4o-mini" in out
    assert "gpt-4o-mini-2024-07-18 3→1 tokens $0.0000010" in out  # format_usd: 2 significant digits


def test_a_run_lists_its_first_steps_and_counts_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], writer: Callable[..., TraceWriter]
) -> None:
    w = writer()
    agent = w.span("planner", kind=None, duration_s=5, attributes={sc.GEN_AI_OPERATION_NAME: "invoke_agent"})
    for i in range(25):
        w.span(
            f"execute_tool search{i}",
            kind=None,
            start_s=0.1 * i,
            duration_s=0.05,
            parent=agent,
            attributes={
                sc.GEN_AI_OPERATION_NAME: "execute_tool",
                "gen_ai.tool.name": "search",
                "gen_ai.tool.call.arguments": json.dumps({"page": i}),
            },
        )
    w.close()
    (row,) = _json(w.path, capsys)["agents"]
    assert (row["name"], row["runs"], row["tool_calls"]) == ("planner", 1, 25)
    assert row["tools"] == [{"name": "search", "calls": 25, "errors": 0, "error_rate": 0.0, "p95_s": 0.05}]
    (run,) = row["worst_runs"]
    assert len(run["steps"]) == 20
    assert run["more_steps"] == 5
    assert run["steps"][19]["arguments"] == '{"page": 19}'
    assert main(["report", str(w.path)]) == 0
    out = capsys.readouterr().out
    assert '   10. tool search {"page": 9}' in out
    assert "   11. tool search" not in out
    assert "   ... and 15 more" in out


def test_what_the_agents_section_shows_is_redacted(
    writer: Callable[..., TraceWriter], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = "marie@curie.org"
    w = writer()
    agent = w.span(f"agent of {secret}", kind="AGENT", duration_s=1)
    w.span(
        f"lookup for {secret}",
        kind="TOOL",
        parent=agent,
        error=True,
        attributes={
            "gen_ai.tool.call.arguments": json.dumps({"user": secret}),
            "gen_ai.tool.name": f"lookup {secret}",
        },
    )
    w.close()
    assert main(["report", str(w.path), "--json", "--html", str(tmp_path / "r.html")]) == 0
    document = capsys.readouterr().out
    assert main(["report", str(w.path)]) == 0
    text = capsys.readouterr().out
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    for shown in (document, text, page):
        assert not leaked(shown)
        assert secret not in shown
    (row,) = json.loads(document)["agents"]
    assert row["name"] == "agent of [REDACTED:email]"
    assert row["worst_runs"][0]["steps"][0]["arguments"] == '{"user": "[REDACTED:email]"}'
    assert row["tools"][0]["name"] == "lookup [REDACTED:email]"


def test_files_without_agents_have_no_agents_section(
    writer: Callable[..., TraceWriter], tmp_path: Path
) -> None:
    w = writer()
    w.span("answer", kind="CHAIN")
    w.close()
    report = read_report([w.path])
    assert report.agents == ()
    assert report.to_dict()["agents"] == []
    console = Console(file=io.StringIO(), width=120)
    print_report(report, console)
    assert "Agents" not in console.file.getvalue()  # type: ignore[attr-defined]
    assert 'id="agents"' not in render_html(report)


HOSTILE_TOOL = "<script>alert(1)</script>"
HOSTILE_ARGUMENT = '"><img src=x onerror=alert(2)>'


def test_the_html_section_is_escaped_and_well_formed(writer: Callable[..., TraceWriter]) -> None:
    w = writer()
    agent = w.span("agent", kind="AGENT")
    w.span(
        "tool",
        kind="TOOL",
        parent=agent,
        error=True,
        attributes={"gen_ai.tool.name": HOSTILE_TOOL, "gen_ai.tool.call.arguments": HOSTILE_ARGUMENT},
    )
    w.close()
    page = render_html(read_report([w.path]))
    checker = check_structure(page)  # no <script>, <img> or on* attribute got through
    text = "".join(checker.text)
    assert HOSTILE_TOOL in text
    assert HOSTILE_ARGUMENT in text
    assert "<script" not in page.lower()


@pytest.fixture
def chromium_profile(tmp_path: Path) -> Path:
    if not CHROMIUM.exists():
        pytest.skip(f"needs {CHROMIUM}, missing here (install it with: {INSTALL})")
    profile = tmp_path / "chromium-profile"
    profile.mkdir()
    return profile


_FACTS = """(() => {
const section = document.querySelector('section#agents');
const box = section.getBoundingClientRect();
return JSON.stringify({
  tables: section.querySelectorAll('table').length,
  stepRows: [...section.querySelectorAll('table.run-steps tbody tr')].map(r => r.innerText),
  overflowing: [...section.querySelectorAll('table, h4, p')].filter(
    e => e.getBoundingClientRect().right > box.right + 1 && !e.closest('.scroll')).length,
  pageWidth: document.documentElement.scrollWidth,
  width: document.documentElement.clientWidth,  // the window less its vertical scroll bar
  scripts: document.scripts.length,
  text: section.innerText,
});
})()"""


def test_the_agents_section_renders_in_headless_chromium(
    weather_file: Path, tmp_path: Path, chromium_profile: Path
) -> None:
    page_path = tmp_path / "report.html"
    assert main(["report", str(weather_file), "--html", str(page_path)]) == 0
    with Page(chromium_profile) as page:
        page.resize(1000)
        page.load(page_path.as_uri())
        facts = json.loads(page.evaluate(_FACTS))
        page.screenshot(tmp_path / "agents.png")
    assert page.requests == [page_path.as_uri()]
    assert facts["tables"] == 2 + 3  # agents, tools, and the steps of three worst runs
    assert len(facts["stepRows"]) == 2 + 1 + 2
    assert "ValueError: 150.0 C is not a weather" in facts["stepRows"][1]
    assert (facts["overflowing"], facts["scripts"]) == (0, 0)
    assert facts["pageWidth"] == facts["width"]  # no sideways scrolling
    for expected in ["Agents", "Tools", "Worst runs", "✗ tool_names 0.000", "convert", '{"city": "Warsaw"}']:
        assert expected in facts["text"]
    assert (tmp_path / "agents.png").read_bytes().startswith(b"\x89PNG")


def test_nested_agents_are_runs_of_their_own_and_steps_of_their_parent(
    writer: Callable[..., TraceWriter], capsys: pytest.CaptureFixture[str]
) -> None:
    w = writer()
    for i, user in enumerate(["ann", "bob", "bob"]):
        outer = w.span("planner", kind="AGENT", start_s=10 * i, duration_s=2, attributes={"user.id": user})
        inner = w.span("researcher", kind="AGENT", start_s=10 * i + 0.1, duration_s=1, parent=outer)
        w.span("search", kind="TOOL", start_s=10 * i + 0.2, duration_s=0.5, parent=inner)
    w.close()
    rows = _json(w.path, capsys, "--group-by", "user.id")["agents"]
    assert [(r["group"], r["name"], r["runs"], r["tool_calls"]) for r in rows] == [
        ("ann", "planner", 1, 1),
        ("ann", "researcher", 1, 1),
        ("bob", "planner", 2, 2),
        ("bob", "researcher", 2, 2),
    ]  # the researcher inherits its planner's user.id, as other spans do
    steps = rows[0]["worst_runs"][0]["steps"]
    assert [(s["kind"], s["name"], s["depth"]) for s in steps] == [
        ("agent", "researcher", 1),
        ("tool", "search", 2),
    ]
    assert main(["report", str(w.path)]) == 0
    out = capsys.readouterr().out.splitlines()
    first = out.index("Worst runs of planner (up to 3; --json or --html for more steps)")
    assert out[first + 2].startswith("   1. agent researcher  1.00 s")
    assert out[first + 3].startswith("      2. tool search {}  500.0 ms")  # nested: indented
