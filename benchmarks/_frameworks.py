"""The harness the agent-framework benchmarks share: one agent run, timed per instrumentation.

A framework benchmark (``bench_framework_<name>.py``) names its variants, each a function that
gets the scripted model server's base URL, sets up one way of tracing (none, tracesim, an
alternative instrumentation) and returns a callable that makes **one agent run**: two model
calls and one tool call (the server asks for ``get_weather`` first, then answers in text once
the request carries the tool's result)::

    def bare(url: str) -> Callable[[], None]:
        agent = make_agent(url)
        return lambda: agent.run_sync("What is the weather in Paris?")

    if __name__ == "__main__":
        run_benchmark(__doc__, {"bare": bare, "tracesim": with_tracesim, "openinference": with_oi})

Each variant runs in a process of its own (instrumentations patch modules process-wide and not
all of them can be undone), started afresh in every round, rounds interleaved; the model server
runs in this parent process, so its work is not counted. A child warms up, then times ``runs``
runs: process CPU (every thread's, export included, up to a flush) and wall time per run. The
table gives the median over rounds and, for each traced variant, the CPU it adds to ``bare``
(the first variant) per run; the last line compares tracesim's added CPU with the cheapest
alternative's. Read ratios, not absolute numbers: the machine is shared.

    python benchmarks/bench_framework_<name>.py [--rounds 5] [--runs 40]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from llm_server import CHAT, LLMServer, Reply  # noqa: E402  (tests/ is on sys.path from here)

TOOL = "get_weather"
ARGUMENTS = '{"city": "Paris"}'
ANSWER = "It is sunny in Paris."
QUESTION = "What is the weather in Paris?"

Variant = Callable[[str], Callable[[], object]]

# Set before any framework is imported, in every child: LiteLLM fetches its price list from
# the network at import otherwise; the Agents SDK exports to OpenAI's servers when a key is set.
CHILD_ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": "", "TRACESIM_INSTRUMENT": ""}


def _has_tool_result(path: str, body: Mapping[str, Any]) -> bool:
    """Whether the request already carries a tool's result (chat completions or Responses)."""
    if path == CHAT:
        return any(isinstance(m, dict) and m.get("role") == "tool" for m in body.get("messages") or ())
    items = body.get("input")
    return isinstance(items, list) and any(
        isinstance(i, dict) and i.get("type") == "function_call_output" for i in items
    )


def agent_policy(path: str, body: Mapping[str, Any]) -> Reply | None:
    """The scripted model of one agent run: call ``get_weather`` first, then answer in text."""
    if path not in (CHAT, "/v1/responses"):
        return None
    return Reply.content(ANSWER) if _has_tool_result(path, body) else Reply.tool_call(TOOL, ARGUMENTS)


def agent_server() -> LLMServer:
    """A model server (start it, or use ``with``) playing `agent_policy` for chat and Responses."""
    server = LLMServer(model="gpt-4o-mini")
    server.policy = agent_policy
    return server


def discard_provider() -> Any:
    """An OpenTelemetry SDK tracer provider exporting in batches to an exporter that discards:
    what an alternative instrumentation is given, as tracesim's spans go to `Discard`."""
    from _common import Discard
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Discard()))
    return provider


def configure_tracesim(**options: Any) -> None:
    """tracesim with content capture on (the default), spans to an exporter that discards."""
    from _common import Discard

    import tracesim

    tracesim.configure(exporters=[Discard()], set_global_tracer_provider=False, **options)


def _flush() -> None:
    from opentelemetry import trace

    import tracesim

    tracesim.force_flush()
    provider: Any = trace.get_tracer_provider()
    if hasattr(provider, "force_flush"):
        provider.force_flush()


def _child(variants: Mapping[str, Variant], name: str, url: str, runs: int) -> None:
    run = variants[name](url)
    for _ in range(max(3, runs // 10)):  # warm-up: imports, connections, caches
        run()
    _flush()
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(runs):
        run()
    wall = time.perf_counter() - wall
    _flush()
    cpu = time.process_time() - cpu
    print(json.dumps({"cpu_ms": cpu / runs * 1e3, "wall_ms": wall / runs * 1e3}))


def run_benchmark(doc: str | None, variants: Mapping[str, Variant]) -> None:
    """Parse the command line and run ``variants`` (the first is the untraced baseline)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=40, help="timed agent runs per variant and round")
    parser.add_argument("--only", action="append", help="run only this variant (repeatable)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(variants, args.child, args.url, args.runs)
        return
    names = [n for n in variants if not args.only or n in args.only]
    samples: dict[str, list[dict[str, float]]] = {n: [] for n in names}
    env = os.environ | CHILD_ENV
    script = str(Path(sys.argv[0]).resolve())
    with agent_server() as server:
        for round_ in range(args.rounds):
            for name in names if round_ % 2 == 0 else reversed(names):
                command = [sys.executable, script, "--child", name, "--url", server.base_url]
                done = subprocess.run(
                    [*command, "--runs", str(args.runs)], env=env, capture_output=True, text=True, check=False
                )
                if done.returncode != 0:
                    sys.exit(f"variant {name!r} failed:\n{done.stderr[-4000:]}")
                samples[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    _table(samples, args)


def _table(samples: Mapping[str, list[dict[str, float]]], args: argparse.Namespace) -> None:
    median = {
        n: {k: statistics.median(s[k] for s in v) for k in ("cpu_ms", "wall_ms")} for n, v in samples.items()
    }
    names = list(median)
    base = median[names[0]]["cpu_ms"]
    print(f"one agent run (2 model calls, 1 tool), median of {args.rounds} rounds x {args.runs} runs")
    print(f"{'variant':<28}{'CPU ms/run':>12}{'wall ms/run':>13}{'added CPU ms':>14}{'x bare':>8}")
    for name in names:
        cpu, wall = median[name]["cpu_ms"], median[name]["wall_ms"]
        added = "" if name == names[0] else f"{cpu - base:.3f}"
        print(f"{name:<28}{cpu:>12.3f}{wall:>13.3f}{added:>14}{cpu / base:>8.3f}")
    ours = [n for n in names[1:] if n.startswith("tracesim")]
    others = [n for n in names[1:] if not n.startswith("tracesim")]
    if ours and others:
        cheapest = min(others, key=lambda n: median[n]["cpu_ms"])
        mine = min(ours, key=lambda n: median[n]["cpu_ms"])
        theirs_added = median[cheapest]["cpu_ms"] - base
        mine_added = median[mine]["cpu_ms"] - base
        ratio = mine_added / theirs_added if theirs_added > 0 else float("inf")
        print(
            f"added CPU per run: {mine} {mine_added:.3f} ms vs {cheapest} (cheapest alternative) "
            f"{theirs_added:.3f} ms: {ratio:.2f}x"
        )
