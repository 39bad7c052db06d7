"""Tokens and cost of LLM calls in ``tracesim report`` (text, JSON, HTML) and ``tracesim show``.

The reference file (`write_llm_known`) has six LLM calls in four traces, in the GenAI,
OpenInference and OpenLLMetry conventions. With the shipped prices (USD per 1M tokens:
gpt-4o-mini 0.15 in / 0.075 cached / 0.60 out, gpt-4.1 2.00 / 0.50 / 8.00,
text-embedding-3-small 0.02) the costs are, by hand:

- trace 0: chat gpt-4o-mini (600 fresh + 400 cached in, 200 out) = 90 + 30 + 120 = 240e-6;
  embeddings 500 in = 10e-6; the trace: 250e-6
- trace 1: chat gpt-4o-mini 2,000 in, 100 out = 300 + 60 = 360e-6; chat gpt-4.1 3,000 in,
  500 out = 6,000 + 4,000 = 10,000e-6; the trace: 10,360e-6
- trace 2: my-local-model, 700 in, 50 out: no price, no cost
- trace 3: gpt-4o, the span's own llm.cost.total 0.25 (the table would say 350e-6)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import tracesim
from tracesim.cli import main
from tracesim.tracefile import load_spans

from .test_html import check_structure
from .tracefiles import TraceWriter, write_llm_known

HINT = "no price for my-local-model; add one under prices: in tracesim.yaml"


@pytest.fixture
def llm_file(writer: Callable[..., TraceWriter]) -> tuple[Path, list[str]]:
    w = writer("llm.jsonl")
    traces = write_llm_known(w)
    w.close()
    return w.path, traces


def _row(name: str, calls: int, tokens_in: int, tokens_out: int, cached: int, cost: float | None) -> dict:
    """A usage row as the JSON writes it (``name`` left out when empty: trace rows have none)."""
    row = {
        "name": name, "calls": calls, "input_tokens": tokens_in, "output_tokens": tokens_out,
        "cached_input_tokens": cached, "priced_calls": 0 if cost is None else calls, "cost_usd": cost,
    }  # fmt: skip
    return row if name else {k: v for k, v in row.items() if k != "name"}


def _report_json(*args: str, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["report", "--json", *args]) == 0
    document: dict[str, object] = json.loads(capsys.readouterr().out)
    return document


def test_json_totals_per_model_span_and_trace(
    llm_file: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    path, traces = llm_file
    usage = _report_json(str(path), capsys=capsys)["llm_usage"]
    assert isinstance(usage, dict)
    assert list(usage) == ["totals", "models", "spans", "trace_count", "traces", "calls", "unpriced_models"]
    assert usage["totals"] == {**_row("all", 6, 7300, 860, 400, 0.26061), "priced_calls": 5}
    assert usage["models"] == [  # most expensive first, the unpriced model last
        _row("gpt-4o", 1, 100, 10, 0, 0.25),
        _row("gpt-4.1", 1, 3000, 500, 0, 0.01),
        _row("gpt-4o-mini-2024-07-18", 2, 3000, 300, 400, 0.0006),  # the model that answered
        _row("text-embedding-3-small", 1, 500, 0, 0, 0.00001),
        _row("my-local-model", 1, 700, 50, 0, None),  # no price: null, never 0
    ]
    assert usage["spans"] == [
        _row("openai.chat", 1, 100, 10, 0, 0.25),
        _row("chat gpt-4.1", 1, 3000, 500, 0, 0.01),
        _row("chat gpt-4o-mini", 2, 3000, 300, 400, 0.0006),
        _row("embeddings text-embedding-3-small", 1, 500, 0, 0, 0.00001),
        _row("ChatCompletion", 1, 700, 50, 0, None),
    ]
    assert usage["trace_count"] == 4
    expected_traces = [
        (traces[3], 1, 100, 10, 0, 0.25),
        (traces[1], 2, 5000, 600, 0, 0.01036),
        (traces[0], 2, 1500, 200, 400, 0.00025),
        (traces[2], 1, 700, 50, 0, None),
    ]
    assert usage["traces"] == [
        {"trace_id": trace, "root": "answer", **_row("", *numbers)} for trace, *numbers in expected_traces
    ]
    assert usage["unpriced_models"] == ["my-local-model"]


def test_json_calls_carry_their_scores(
    llm_file: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    path, traces = llm_file
    usage = _report_json(str(path), "--top", "3", capsys=capsys)["llm_usage"]
    assert isinstance(usage, dict)
    assert [t["trace_id"] for t in usage["traces"]] == [traces[3], traces[1], traces[0]]  # the top 3
    calls = usage["calls"]
    assert [(c["name"], c["model"], c["cost_usd"]) for c in calls] == [
        ("openai.chat", "gpt-4o", 0.25),
        ("chat gpt-4.1", "gpt-4.1", 0.01),
        ("chat gpt-4o-mini", "gpt-4o-mini-2024-07-18", 0.00036),
    ]
    assert calls[1]["scores"] == [  # a late result, on a carrier span linked to the call
        {"evaluator": "human", "status": "ok", "score": 1.0, "passed": None, "label": "helpful"}
    ]
    assert calls[0]["scores"] == calls[2]["scores"] == []
    assert main(["report", "--json", str(path), "--top", "10"]) == 0
    everything = json.loads(capsys.readouterr().out)["llm_usage"]["calls"]
    first = next(c for c in everything if c["cached_input_tokens"] == 400)
    assert (first["cost_usd"], first["scores"][0]["evaluator"], first["scores"][0]["passed"]) == (
        0.00024,
        "levenshtein",
        True,
    )


def test_text_tables(llm_file: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    path, traces = llm_file
    assert main(["report", str(path), "--top", "2"]) == 0
    out = capsys.readouterr().out

    def cells(first: str) -> list[str]:
        usage = out[out.index("LLM usage by model") :]  # the span table above has rows of these names too
        line = next(line for line in usage.splitlines() if line.startswith(f"│ {first} "))
        return [c.strip() for c in line.split("│")[1:-1]]

    assert (
        "6 LLM calls in 4 traces: 7,300 input tokens (400 cached), 860 output tokens; "
        "cost $0.2606 for the 5 calls with a price." in out
    )
    assert "LLM usage by model" in out
    assert "LLM usage by span" in out
    assert cells("gpt-4o-mini-2024-07-18") == [
        "gpt-4o-mini-2024-07-18",
        "2",
        "3,000",
        "400",
        "300",
        "$0.00060",
    ]
    assert cells("gpt-4.1") == ["gpt-4.1", "1", "3,000", "0", "500", "$0.0100"]
    assert cells("my-local-model") == ["my-local-model", "1", "700", "0", "50", "–"]
    assert cells("embeddings text-embedding-3-small")[1:] == ["1", "500", "0", "0", "$0.000010"]
    assert "LLM usage by trace: the 2 most expensive of 4" in out
    assert cells(traces[1]) == [traces[1], "answer", "2", "5,000", "0", "600", "$0.0104"]
    assert not any(line.startswith(f"│ {traces[2]}") for line in out.splitlines())  # not in the top 2
    assert out.count(HINT) == 1  # said once, with what to write


def test_html_tables(
    llm_file: tuple[Path, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, traces = llm_file
    page_path = tmp_path / "report.html"
    assert main(["report", str(path), "--html", str(page_path)]) == 0
    capsys.readouterr()
    page = page_path.read_text(encoding="utf-8")
    checker = check_structure(page)
    section = page[page.index('<section id="llm-usage">') :]
    section = section[: section.index("</section>")]
    td = '<td class="n">'
    assert (
        f"<tr><td>gpt-4.1</td>{td}1</td>{td}3,000</td>{td}0</td>{td}500</td>{td}$0.0100</td></tr>" in section
    )
    assert f"<tr><td>my-local-model</td>{td}1</td>{td}700</td>{td}0</td>{td}50</td>{td}–</td></tr>" in section
    trace_row = f"<tr><td>answer</td><td>{traces[0]}</td>{td}2</td>{td}1,500</td>{td}400</td>{td}200</td>"
    assert trace_row + f"{td}$0.00025</td></tr>" in section
    # each call with model, tokens, cost and scores
    call = (
        f"<tr><td>chat gpt-4o-mini</td><td>gpt-4o-mini-2024-07-18</td>{td}1,000</td>{td}400</td>{td}200</td>"
        f"{td}$0.00024</td><td>✓ levenshtein 0.900</td><td>{traces[0]}</td></tr>"
    )
    assert call in section
    assert "· human 1.000 helpful" in section
    text = "".join(checker.text)
    assert "6 LLM calls in 4 traces" in text
    assert text.count(HINT) == 1


def test_prices_from_the_config_file_override_and_extend(
    llm_file: tuple[Path, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = llm_file
    (tmp_path / "tracesim.yaml").write_text(  # tests run in tmp_path: the working directory's file
        "prices:\n  my-local-model: {input: 1.0, output: 2.0}\n  gpt-4.1: {input: 1.0, output: 4.0}\n"
    )
    usage = _report_json(str(path), capsys=capsys)["llm_usage"]
    assert isinstance(usage, dict)
    models = {m["name"]: m["cost_usd"] for m in usage["models"]}
    assert models["my-local-model"] == 0.0008  # 700 x 1.0 + 50 x 2.0, per 1M
    assert models["gpt-4.1"] == 0.005  # 3,000 x 1.0 + 500 x 4.0: the user's price wins
    assert models["gpt-4o-mini-2024-07-18"] == 0.0006  # shipped prices still apply
    assert usage["totals"]["cost_usd"] == 0.25641
    assert usage["totals"]["priced_calls"] == 6
    assert usage["unpriced_models"] == []
    assert main(["report", str(path)]) == 0
    assert "no price for" not in capsys.readouterr().out

    other = tmp_path / "other.yaml"
    other.write_text("prices:\n  gpt-4o-mini: {input: 1.0, cached_input: 0.5, output: 1.0}\n")
    usage = _report_json(str(path), "--config", str(other), capsys=capsys)["llm_usage"]
    assert isinstance(usage, dict)
    mini = next(m for m in usage["models"] if m["name"] == "gpt-4o-mini-2024-07-18")
    assert mini["cost_usd"] == 0.0031  # (2,600 + 400 x 0.5 + 300) / 1M: the dated name found its price
    assert usage["unpriced_models"] == ["my-local-model"]  # --config replaces ./tracesim.yaml


@pytest.mark.parametrize(
    ("yaml", "setting"),
    [
        ("prices:\n  gpt-4o: {input: -1, output: 2}\n", "prices.gpt-4o.input"),
        ("prices:\n  gpt-4o: {input: 1}\n", "prices.gpt-4o.output"),
        ("prices:\n  gpt-4o: {input: 1, output: 2, cache: 1}\n", "prices.gpt-4o.cache"),
        ("prices:\n  gpt-4o: 2.5\n", "prices.gpt-4o"),
        ("prices: [gpt-4o]\n", "prices"),
    ],
)
def test_a_bad_price_is_a_usage_error_naming_the_key(
    llm_file: tuple[Path, list[str]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    yaml: str,
    setting: str,
) -> None:
    path, _ = llm_file
    (tmp_path / "tracesim.yaml").write_text(yaml)
    for command in ("report", "show"):
        assert main([command, str(path)]) == 2
        err = capsys.readouterr().err
        assert f"invalid value for setting {setting!r}" in err
        assert "tracesim.yaml" in err


def test_files_without_llm_calls_look_as_before(
    known_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(known_file), "--html", str(tmp_path / "r.html")]) == 0
    out = capsys.readouterr().out
    for absent in ("LLM", "token", "$", "no price"):
        assert absent not in out
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "llm-usage" not in page
    assert "LLM" not in page
    assert main(["show", str(known_file)]) == 0
    shown = capsys.readouterr().out
    for absent in ("LLM", "$", "no price"):
        assert absent not in shown


def test_show_cost_per_call_and_total_per_trace(
    llm_file: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    path, traces = llm_file
    assert main(["show", str(path), "--no-details"]) == 0
    out = capsys.readouterr().out
    blocks = out.split("\n\n")
    assert blocks[0].splitlines() == [
        f"trace {traces[0]}  2026-09-21T14:13:20.000Z",
        "answer  AGENT  1.00 s",
        "├─ chat gpt-4o-mini  LLM  100.0 ms  gpt-4o-mini-2024-07-18 1,000→200 tokens  $0.00024",
        "└─ embeddings text-embedding-3-small  LLM  100.0 ms  text-embedding-3-small 500→? tokens  $0.000010",
        "LLM total: 2 calls  1,500→200 tokens  $0.00025",
    ]
    assert "LLM total: 2 calls  5,000→600 tokens  $0.0104" in blocks[1]
    assert blocks[2].splitlines()[2:] == [
        "└─ ChatCompletion  LLM  100.0 ms  my-local-model 700→50 tokens  $—",  # OpenInference, no price
        "LLM total: 1 call  700→50 tokens  $—",
    ]
    assert "└─ openai.chat  LLM  100.0 ms  gpt-4o 100→10 tokens  $0.2500" in blocks[3]  # the span's own cost
    assert out.count(HINT) == 1

    assert main(["show", str(path), "--trace", traces[0]]) == 0  # with details: scores under the call
    detailed = capsys.readouterr().out
    assert "scores: ✓ levenshtein 0.9 pass" in detailed
    assert "no price for" not in detailed  # only models that were shown


def test_show_uses_configured_prices(
    llm_file: tuple[Path, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, traces = llm_file
    config = tmp_path / "prices.yaml"
    config.write_text("prices:\n  my-local-model: {input: 1.0, output: 2.0}\n")
    assert main(["show", str(path), "--trace", traces[2], "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "my-local-model 700→50 tokens  $0.00080" in out
    assert "LLM total: 1 call  700→50 tokens  $0.00080" in out


def test_an_agent_traced_with_instrument_openai_end_to_end(
    llm_server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("opentelemetry.instrumentation.genai.openai", reason="needs the 'openai' extra")
    import openai

    from tracesim.integrations import uninstrument_openai

    llm_server.model = "gpt-4o-mini-2024-07-18"  # what OpenAI answers for gpt-4o-mini
    llm_server.judge = lambda request: "Warsaw."
    path = tmp_path / "traces.jsonl"
    tracesim.configure(exporters=["jsonl"], jsonl_path=path, instrument=["openai"])
    client = openai.OpenAI(base_url=llm_server.base_url, api_key="test", max_retries=0)
    try:

        @tracesim.trace(kind="agent")
        def agent(question: str) -> str:
            for _ in range(2):  # 5 tokens in, 1 out, each time
                reply = client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
                )
            return str(reply.choices[0].message.content)

        assert agent("Where was Marie Curie born?") == "Warsaw."
        assert tracesim.force_flush()
    finally:
        client.close()
        uninstrument_openai()
    chat = next(s for s in load_spans(path) if s.name == "chat gpt-4o-mini")
    # priced at export, for OpenInference backends: (5 x 0.15 + 1 x 0.60) / 1M
    assert chat.attributes["llm.token_count.prompt"] == 5
    assert chat.attributes["llm.cost.total"] == pytest.approx(1.35e-6)
    usage = _report_json(str(path), capsys=capsys)["llm_usage"]
    assert isinstance(usage, dict)
    assert usage["models"] == [_row("gpt-4o-mini-2024-07-18", 2, 10, 2, 0, 2.7e-6)]
    assert usage["spans"] == [_row("chat gpt-4o-mini", 2, 10, 2, 0, 2.7e-6)]
    assert [(t["root"], t["calls"], t["cost_usd"]) for t in usage["traces"]] == [("agent", 2, 2.7e-6)]
    assert main(["show", str(path), "--no-details"]) == 0
    assert "LLM total: 2 calls  10→2 tokens  $0.0000027" in capsys.readouterr().out
