"""configure(), reconfiguration, unconfigured use, an existing TracerProvider, exit."""

from __future__ import annotations

import io
import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

import tracesim
from tracesim.exporters import ConsoleExporter
from tracesim.tracefile import load_spans

RunPython = Callable[..., "subprocess.CompletedProcess[str]"]


@tracesim.trace(kind="agent")
def answer(question: str) -> str:
    return question.upper()


def test_the_default_is_the_local_file_under_the_working_directory(tmp_path: Path) -> None:
    tracesim.configure(service_name="default-file")
    answer("hi")
    assert tracesim.force_flush()
    (span,) = load_spans(tmp_path / ".tracesim" / "traces.jsonl")
    assert span.name == "answer"
    assert span.attributes["output.value"] == "HI"
    assert span.resource["service.name"] == "default-file"
    assert span.resource["openinference.project.name"] == "default-file"


def test_configure_twice_flushes_the_old_pipeline_and_switches_to_the_new(tmp_path: Path) -> None:
    tracesim.configure(jsonl_path="first.jsonl")
    answer("one")  # batched: still in the first pipeline's queue
    tracesim.configure(jsonl_path="second.jsonl", service_name="second")
    answer("two")
    tracesim.force_flush()
    first = load_spans(tmp_path / "first.jsonl")
    second = load_spans(tmp_path / "second.jsonl")
    assert [s.attributes["input.value"] for s in first] == ["one"]
    assert [s.attributes["input.value"] for s in second] == ["two"]
    assert second[0].resource["service.name"] == "second"


def test_shutdown_stops_tracing_quietly(tmp_path: Path) -> None:
    tracesim.configure(jsonl_path="t.jsonl")
    answer("before")
    assert tracesim.shutdown()
    assert answer("after") == "AFTER"  # no warning: shutting down was deliberate
    assert [s.attributes["input.value"] for s in load_spans(tmp_path / "t.jsonl")] == ["before"]


def test_unconfigured_code_runs_unchanged_with_one_warning(tmp_path: Path, run_python: RunPython) -> None:
    code = """
import asyncio, warnings
warnings.simplefilter("always")
import tracesim
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    @tracesim.trace
    def f(x): return x + 1
    @tracesim.trace
    def g(n):
        yield from range(n)
    @tracesim.trace
    async def h(): return 3
    results = [f(1), f(2), list(g(3)), asyncio.run(h())]
    with tracesim.span("block") as s:
        s.set_output("ignored")
        results.append(s.is_recording())
print(results)
print([type(w.message).__name__ for w in caught])
print(str(caught[0].message))
"""
    result = run_python(code, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "[2, 3, [0, 1, 2], 3, False]"
    assert lines[1] == "['NotConfiguredWarning']"
    assert "tracesim.configure()" in lines[2]
    assert not (tmp_path / ".tracesim").exists()


def test_importing_tracesim_patches_nothing(tmp_path: Path, run_python: RunPython) -> None:
    code = """
import sys, threading, concurrent.futures
from opentelemetry import trace
def state():
    pool = concurrent.futures.ThreadPoolExecutor
    return (threading.Thread.start, pool.submit, type(trace.get_tracer_provider()))
before = state()
import tracesim
after = state()
print(before == after, "tracesim._demo_agent" in sys.modules)
"""
    result = run_python(code, cwd=tmp_path)
    assert result.stdout.strip() == "True False", result.stderr


def test_an_existing_tracer_provider_is_joined_not_replaced(tmp_path: Path, run_python: RunPython) -> None:
    code = """
import json
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

theirs = InMemorySpanExporter()
provider = TracerProvider(resource=Resource.create({"service.name": "their-app"}))
provider.add_span_processor(SimpleSpanProcessor(theirs))
trace.set_tracer_provider(provider)

import tracesim
tracesim.configure(exporters=["jsonl"], jsonl_path="ours.jsonl", service_name="ignored")

@tracesim.trace(kind="tool")
def lookup(x):
    return x

tracer = trace.get_tracer("their-code")
with tracer.start_as_current_span("their-request"):
    lookup("q")
tracesim.force_flush()
print(trace.get_tracer_provider() is provider)
print(json.dumps(sorted(s.name for s in theirs.get_finished_spans())))
"""
    result = run_python(code, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    same_provider, theirs = result.stdout.splitlines()
    assert same_provider == "True"
    assert json.loads(theirs) == ["lookup", "their-request"]  # their exporter sees our spans too
    ours = {s.name: s for s in load_spans(tmp_path / "ours.jsonl")}
    assert set(ours) == {"lookup", "their-request"}  # and ours sees theirs: one pipeline
    assert ours["lookup"].parent_span_id == ours["their-request"].span_id
    assert ours["lookup"].resource["service.name"] == "their-app"


def test_tracesim_installs_its_provider_so_other_instrumentation_joins_the_trace(
    tmp_path: Path, run_python: RunPython
) -> None:
    code = """
from opentelemetry import trace
import tracesim
tracesim.configure(jsonl_path="t.jsonl")
@tracesim.trace
def agent():
    with trace.get_tracer("httpx-like").start_as_current_span("HTTP GET"):
        pass
agent()
"""
    result = run_python(code, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    spans = {s.name: s for s in load_spans(tmp_path / "t.jsonl")}
    assert spans["HTTP GET"].parent_span_id == spans["agent"].span_id


def test_spans_still_queued_at_exit_are_written(tmp_path: Path, run_python: RunPython) -> None:
    code = """
import tracesim
tracesim.configure()
@tracesim.trace
def work(i):
    return i
for i in range(300):
    work(i)
# no flush, no shutdown: the atexit hook drains
"""
    result = run_python(code, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    spans = load_spans(tmp_path / ".tracesim" / "traces.jsonl")
    assert sorted(int(s.attributes["input.value"]) for s in spans) == list(range(300))


def test_console_exporter_prints_each_trace_as_a_tree() -> None:
    stream = io.StringIO()

    @tracesim.trace(kind="tool")
    def lookup(city: str) -> str:
        return city

    @tracesim.trace(kind="agent")
    def agent(question: str) -> str:
        with tracesim.span("retrieve", kind="retriever"):
            pass
        return lookup("Warsaw")

    tracesim.configure(exporters=[ConsoleExporter(stream)], batch_export=False)
    agent("Where?")
    tracesim.force_flush()
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("agent  AGENT  ")
    assert lines[1] == "│  in: Where?"
    assert lines[2] == "│  out: Warsaw"
    assert lines[3].startswith("├─ retrieve  RETRIEVER  ")
    assert lines[4].startswith("└─ lookup  TOOL  ")


@pytest.mark.parametrize("exporters", [["console", "jsonl"], "jsonl,console"])
def test_exporter_names_build_exporters(exporters: object, capsys: pytest.CaptureFixture[str]) -> None:
    tracesim.configure(exporters=exporters)  # type: ignore[arg-type]
    answer("x")
    tracesim.force_flush()
    assert "answer  AGENT" in capsys.readouterr().out
    assert load_spans(".tracesim/traces.jsonl")[0].name == "answer"


def test_the_export_queue_grows_for_scoring_bursts_only_when_evaluators_are_in_use(
    run_python: RunPython, tmp_path: Path
) -> None:
    """Without evaluators the queue is OpenTelemetry's 2,048 spans (its memory when a tight loop
    fills it); with them it also holds a full scoring queue of spans ending at once."""
    # The gate's size (the SDK's own queue keeps a few places more for racing callers).
    size = "_runtime.current.processors[0].queue_size"
    rules = 'evaluators=[{"match": "*", "evaluators": ["exact"]}]'
    cases = {
        "none": "",
        "rules": f"tracesim.configure(exporters=['jsonl'], scoring_queue_size=5000, {rules})",
        "decorated": "tracesim.trace(evaluators=['exact'])(lambda: 'x')\n"
        "tracesim.configure(exporters=['jsonl'], scoring_queue_size=5000)",
    }
    sizes = {}
    for case, setup in cases.items():
        code = (
            "import tracesim\nfrom tracesim import _runtime\n"
            "tracesim.configure(exporters=['jsonl'], scoring_queue_size=5000)\n"
            f"{setup}\nprint({size})"
        )
        done = run_python(code, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        sizes[case] = int(done.stdout.strip())
    assert sizes == {"none": 2048, "rules": 7048, "decorated": 7048}
