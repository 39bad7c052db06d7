"""The host never waits or freezes because of tracesim, and bad settings fail early and clearly."""

from __future__ import annotations

import http.server
import logging
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tracesim
from tracesim.evaluators import ExactMatch, evaluator
from tracesim.testing import capture_spans
from tracesim.tracefile import load_spans


def test_a_hung_evaluator_does_not_stop_scoring_of_other_functions(caplog: pytest.LogCaptureFixture) -> None:
    release = threading.Event()

    @evaluator(timeout_s=0.2)
    def hangs(output: Any, expected: Any) -> float:
        release.wait(60)
        return 1.0

    @evaluator  # no timeout_s: counted as stuck after max_defer_s, never given more threads
    def hangs_quietly(output: Any, expected: Any) -> float:
        release.wait(60)
        return 1.0

    @tracesim.trace(evaluators=[hangs], expected="ok")
    def stuck() -> str:
        return "ok"

    @tracesim.trace(evaluators=[hangs_quietly], expected="ok")
    def stuck_quietly() -> str:
        return "ok"

    @tracesim.trace(evaluators=[ExactMatch()], expected="ok")
    def healthy() -> str:
        return "ok"

    threads_before = threading.active_count()
    try:
        with capture_spans(scoring_mode="background", scoring_workers=2, max_defer_s=0.5) as captured:
            for _ in range(20):  # far more hung runs than 4 x scoring_workers
                stuck()
                stuck_quietly()
            for _ in range(50):
                healthy()
            # Every healthy call gets scored: on its span, or (past max_defer_s) on a carrier.
            deadline = time.monotonic() + 30
            while _unscored(captured, "healthy", "exact") and time.monotonic() < deadline:
                time.sleep(0.01)
            assert len(captured.named("healthy")) == 50
            assert not _unscored(captured, "healthy", "exact")
            # Threads stay bounded: the workers, at most two stuck runs per hung evaluator and
            # their replacements, the watchdog.
            assert threading.active_count() - threads_before <= 2 + 2 * 2 * 2 + 2
            release.set()
            assert tracesim.force_flush(30)
            stats = tracesim.scoring_stats()
            # Results on the spans, or on carrier spans for those that waited past max_defer_s.
            errors = {
                e.attributes.get("error.type")
                for s in captured.named("stuck") + captured.named("evaluation hangs")
                for e in s.event("gen_ai.evaluation.result")
            }
    finally:
        release.set()
    assert errors <= {"timeout", "unresponsive"}
    assert "unresponsive" in errors
    assert stats.dropped == 0
    assert any("runs still going past" in r.getMessage() for r in caplog.records)


def _unscored(captured: Any, name: str, evaluator: str) -> list[str]:
    """Span ids of ``name`` spans (expected: 50) with no ``evaluator`` result yet."""
    spans = captured.named(name)
    if len(spans) < 50:
        return ["not all ended yet"]
    late = {c.links[0].span_id for c in captured.named(f"evaluation {evaluator}")}
    return [
        s.span_id
        for s in spans
        if f"tracesim.eval.{evaluator}.passed" not in s.attributes and s.span_id not in late
    ]


def _waited_for_a_cpu() -> float:
    """Seconds this thread has been runnable but not running (Linux schedstat); 0.0 elsewhere.

    On a loaded machine the kernel may leave a thread waiting for a core for a long time: that
    is no stall of tracesim's making, while waiting for the GIL (asleep, not runnable) is.
    """
    try:
        with open(f"/proc/self/task/{threading.get_native_id()}/schedstat", "rb") as stats:
            return int(stats.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stolen() -> list[float]:
    """Seconds each virtual CPU of this machine was kept off its physical one by the hypervisor
    (``steal`` in /proc/stat; 10 ms steps); [] elsewhere. A stolen core stalls every thread of
    the process on it, the one holding the GIL included: the guest's own counters cannot see it."""
    try:
        with open("/proc/stat", "rb") as stats:
            return [
                int(line.split()[8]) / _TICKS
                for line in stats
                if line.startswith(b"cpu") and not line.startswith(b"cpu ")
            ]
    except (OSError, ValueError, IndexError):
        return []


def _max_stall_while(work: threading.Thread) -> tuple[float, str]:
    """Tick on this thread every millisecond while ``work`` runs: the longest gap seen, less the
    time the machine withheld a core meanwhile (this thread waiting for one, `_waited_for_a_cpu`;
    the busiest core stolen by the hypervisor, `_stolen`), and how that gap was made up."""
    longest, detail = 0.0, "no gap"
    last, waited, stolen = time.perf_counter(), _waited_for_a_cpu(), _stolen()
    work.start()
    while work.is_alive():
        time.sleep(0.001)
        now, now_waited, now_stolen = time.perf_counter(), _waited_for_a_cpu(), _stolen()
        steal = max((b - a for a, b in zip(stolen, now_stolen, strict=False)), default=0.0)
        gap = (now - last) - (now_waited - waited) - steal
        if gap > longest:
            longest = gap
            detail = (
                f"{(now - last) * 1000:.0f} ms between ticks, of which {(now_waited - waited) * 1000:.0f} ms"
                f" waiting for a core and {steal * 1000:.0f} ms stolen by the hypervisor"
            )
        last, waited, stolen = now, now_waited, now_stolen
    work.join()
    return longest, detail


def test_the_main_thread_keeps_ticking_while_a_1_mb_output_is_scored() -> None:
    words = [
        "the",
        "quick",
        "brown",
        "fox",
        "jumps",
        "over",
        "the",
        "lazy",
        "dog",
        "while",
        "scoring",
        "runs",
        "elsewhere",
    ]
    output = " ".join(words[(i * 7) % len(words)] for i in range(150_000))[:1_000_000]
    expected = " ".join(words[(i * 5) % len(words)] for i in range(150_000))[:1_000_000]
    specs = [
        "levenshtein",
        "levenshtein_distance",
        "rouge",
        "rouge:rouge_type=rouge1,name=rouge1",
        "jaccard",
        "f1",
        "cosine",
        "content_similarity",
        "exact",
    ]

    @tracesim.trace(evaluators=specs, expected=expected)
    def answer() -> str:
        return output

    with capture_spans(scoring_mode="background") as captured:
        answer()
        stall, detail = _max_stall_while(threading.Thread(target=tracesim.force_flush, args=(120,)))
        span = captured.by_name("answer")
    scored = {e.attributes["gen_ai.evaluation.name"] for e in span.event("gen_ai.evaluation.result")}
    assert scored == {s.split(":")[0] if ":" not in s else "rouge1" for s in specs}
    assert stall < 0.1, f"the main thread stalled for {stall * 1000:.0f} ms ({detail})"


class _Silent(http.server.BaseHTTPRequestHandler):
    """A backend that takes the request and never answers."""

    def do_POST(self) -> None:
        self.server.hold.wait(60)  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def hanging_backend() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Silent)
    server.hold = threading.Event()  # type: ignore[attr-defined]
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.hold.set()  # type: ignore[attr-defined]
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("timeout_s", [2.0])
def test_exit_with_a_hanging_backend_honours_shutdown_timeout_s(
    tmp_path: Path, hanging_backend: str, timeout_s: float
) -> None:
    code = textwrap.dedent(
        f"""
        import time, tracesim
        tracesim.configure(exporters=["otlp"], otlp_endpoint={hanging_backend!r},
                           spool_dir="spool", shutdown_timeout_s={timeout_s})

        @tracesim.trace
        def call(i):
            return i

        for i in range(2000):
            call(i)
        print("calls done", time.monotonic(), flush=True)
        """
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    ended = time.monotonic()
    assert done.returncode == 0, done.stderr
    exit_after = ended - float(done.stdout.split()[-1])
    # Interpreter exit itself takes a moment; the drain must not add more than its deadline.
    assert exit_after < timeout_s + 4.0, f"exit took {exit_after:.1f} s (shutdown_timeout_s={timeout_s})"
    assert ended - started < 60
    # Nothing lost: what the backend never answered for waits in the spool for the next run.
    spooled = load_spans(sorted((tmp_path / "spool").glob("*.jsonl")))
    assert sorted(int(s.attributes["input.value"]) for s in spooled) == list(range(2000))


def test_an_unusable_trace_file_path_fails_at_configure(tmp_path: Path) -> None:
    (tmp_path / "a_directory").mkdir()
    with pytest.raises(tracesim.ConfigError) as info:
        tracesim.configure(jsonl_path=str(tmp_path / "a_directory"))
    assert info.value.setting == "jsonl_path"
    assert "TRACESIM_JSONL_PATH" not in str(info.value)  # it came from the argument, not the variable
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(tracesim.ConfigError, match="jsonl_path"):
        tracesim.configure(jsonl_path=str(blocker / "traces.jsonl"))  # its parent is a file


@pytest.mark.skipif(
    not os.path.exists("/dev/full"), reason="needs /dev/full (Linux) for a device that is always full"
)
def test_a_full_device_logs_one_error_not_one_per_call(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="tracesim")
    tracesim.configure(jsonl_path="/dev/full", batch_export=False, internal_errors="log")

    @tracesim.trace
    def call() -> str:
        return "ok"

    for _ in range(20):
        assert call() == "ok"
    tracesim.shutdown(5)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert 1 <= len(errors) <= 2, [r.getMessage() for r in errors]
    assert all(r.exc_info is None for r in errors)  # a message, not a traceback per call


def test_a_huge_attribute_value_is_cut_on_the_callers_side() -> None:
    with capture_spans(max_value_chars=1000) as captured, tracesim.span("work") as s:
        s.set_attribute("blob", "x " * 1_000_000)
        s.set_attribute("rows", list(range(1_000_000)))
        s.set_attribute("mapping", {str(i): i for i in range(100_000)})
    attributes = captured.by_name("work").attributes
    assert len(attributes["blob"]) < 1100
    assert "truncated" in attributes["mapping"]
    assert len(attributes["mapping"]) < 1100
    assert isinstance(attributes["rows"], str)  # too long for a list attribute: bounded JSON text
    assert attributes["rows"].startswith("[0,1,2")
    assert attributes["rows"].endswith("…[truncated]")


@pytest.mark.parametrize("signal", ["traces", "logs", "metrics"])
def test_force_flush_honours_its_deadline_when_the_backend_hangs(signal: str) -> None:
    # OpenTelemetry's batch processors ignore force_flush's timeout (opentelemetry-python#4568):
    # behind an export that hangs, the flush waited for the exporter's own 10 s timeout.
    from scripted_backend import ScriptedBackend

    with ScriptedBackend() as backend:
        opened = {"traces": backend.traces_open, "logs": backend.logs_open, "metrics": backend.metrics_open}
        opened[signal].clear()
        try:
            tracesim.configure(
                exporters=["otlp"],
                otlp_endpoint=backend.traces_url,
                phoenix_annotations=False,
                mlflow_assessments=False,
                spool_dir="none",  # nothing between the queue and the backend that hangs
            )

            @tracesim.trace(evaluators=[ExactMatch()], expected="ok")
            def answer(i: int) -> str:
                return "ok"

            for i in range(20):
                answer(i)
            tracesim.force_flush(0.5)  # the first export is now in progress, and hangs
            for i in range(20, 40):
                answer(i)
            for _ in range(2):  # the second time, the flush still in progress is waited for
                started = time.monotonic()
                assert tracesim.force_flush(1.0) is False  # not delivered: said, not waited for
                assert time.monotonic() - started < 6.0  # the exporter's timeout is 10 s
        finally:
            opened[signal].set()
        assert tracesim.force_flush(30)
        tracesim.shutdown(10)
    if signal == "traces":
        assert len([s for s in backend.spans if s.name == "answer"]) == 40
    elif signal == "logs":
        assert len(backend.logs) == 40


def test_exit_where_no_thread_can_start_still_flushes_and_stops(tmp_path: Path) -> None:
    # Python 3.12.0 and 3.12.1 refuse new threads in atexit handlers ("can't create new thread
    # at interpreter shutdown"), where tracesim flushes with a deadline on threads of its own.
    # The exit here refuses them the same way: the flush and the stops then run in turn.
    code = textwrap.dedent(
        """
        import atexit, threading, tracesim
        from tracesim.evaluators import ExactMatch

        tracesim.configure(exporters=["jsonl"], jsonl_path="traces.jsonl")

        @tracesim.trace(evaluators=[ExactMatch()], expected=lambda i: str(i))
        def call(i):
            return str(i)

        for i in range(50):
            call(i)

        def refuse(self):
            raise RuntimeError("can't create new thread at interpreter shutdown")

        atexit.register(setattr, threading.Thread, "start", refuse)  # runs before tracesim's
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    spans = load_spans([tmp_path / "traces.jsonl"])
    assert sorted(int(s.attributes["input.value"]) for s in spans) == list(range(50))
    assert all(s.attributes["tracesim.eval.exact.score"] == 1.0 for s in spans)  # scored, then written


def test_a_slow_evaluator_at_shutdown_leaves_time_to_send_the_queued_spans(
    scripted_backend: Any,
) -> None:
    # The drain of scoring used to take the whole deadline: the close then had none, and spans
    # queued for a healthy backend were left behind. Now they start at once, and the drain
    # leaves part of the deadline to the close.
    release = threading.Event()

    @evaluator(timeout_s=60)
    def slow_judge(output: Any, expected: Any) -> float:
        release.wait(60)
        return 1.0

    tracesim.configure(
        exporters=["otlp"],
        otlp_endpoint=scripted_backend.traces_url,
        phoenix_annotations=False,
        mlflow_assessments=False,
        spool_dir="none",
        evaluation_log_events=False,
    )

    @tracesim.trace(evaluators=[slow_judge], expected="x")
    def judged() -> str:
        return "x"

    @tracesim.trace
    def plain(i: int) -> int:
        return i

    try:
        judged()
        for i in range(1500):
            plain(i)
        assert tracesim.shutdown(3.0) is False  # the judge did not finish: said
    finally:
        release.set()
    names = scripted_backend.span_names()
    assert names.count("plain") == 1500
    assert names.count("judged") == 1  # ended at the drain's deadline, its result deferred


def test_spans_a_shutdown_leaves_in_the_queue_are_said(
    scripted_backend: Any, caplog: pytest.LogCaptureFixture
) -> None:
    scripted_backend.traces_open.clear()  # a backend that hangs, and no spool to take the spans
    tracesim.configure(
        exporters=["otlp"], otlp_endpoint=scripted_backend.traces_url, spool_dir="none", metrics="none"
    )

    @tracesim.trace
    def plain(i: int) -> int:
        return i

    for i in range(1500):
        plain(i)
    with caplog.at_level(logging.WARNING, logger="tracesim"):
        started = time.monotonic()
        assert tracesim.shutdown(2.0) is False
        assert time.monotonic() - started < 8.0  # its deadline, not the SDK's 30 s
    # Sending goes on in the background while the process lives; what is left to send is said.
    (said,) = [r.getMessage() for r in caplog.records if "still stopping in the background" in r.getMessage()]
    assert "span processor ExportQueue (1500 spans still to send)" in said
    # The backend answers again: the spans still on their way arrive. Waited for here, so that no
    # exporter of this test is left retrying (with random jitter) while later tests run.
    scripted_backend.traces_open.set()
    deadline = time.monotonic() + 60
    while len(scripted_backend.span_names()) < 1500 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sorted(scripted_backend.span_names()) == ["plain"] * 1500
