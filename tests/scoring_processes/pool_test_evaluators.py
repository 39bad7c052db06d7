"""Module-level evaluators a scoring worker process can rebuild by name, for the pool's tests.

They act on the output they score: ``"hang"`` blocks, ``"die"`` kills the process it runs in
(a crash), anything else is scored after ``delay_s``.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from tracesim.evaluators import Evaluator


class Behaves(Evaluator):
    """Scores 1.0 after ``delay_s``; hangs on ``"hang"``, kills its own process on ``"die"``."""

    type_name = "behaves"
    requires_expected = False

    def __init__(self, *, delay_s: float = 0.0, **shared: Any) -> None:
        super().__init__(**shared)
        self.delay_s = delay_s

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> float:
        if output == "hang":
            time.sleep(3600)
        if output == "die":
            os.kill(os.getpid(), signal.SIGKILL)
        if self.delay_s:
            time.sleep(self.delay_s)
        return 1.0


class WherePid(Evaluator):
    """Scores the id of the process that scored it (also as ``details["pid"]``)."""

    type_name = "where_pid"
    requires_expected = False

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Any:
        from tracesim.evaluators import Measurement

        return Measurement(float(os.getpid()), {"pid": os.getpid()})


class WhereSlice(Evaluator):
    """Scores how long tracesim's background loops hold the interpreter where it runs
    (`tracesim._host_first.SLICE_S`)."""

    type_name = "where_slice"
    requires_expected = False

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> float:
        from tracesim import _host_first

        return _host_first.SLICE_S


def spawned_host(folder: str) -> None:
    """A `multiprocessing` spawn child that configures tracesim and scores through its own worker:
    writes ``pids.json`` (its pid, its workers' pids, the scoring stats)."""
    import json

    import tracesim
    from tracesim import _runtime

    tracesim.configure(exporters=[], scoring_processes=1)

    @tracesim.trace(evaluators=[WherePid()], expected=lambda i: "x")
    def scored(i: int) -> str:
        return f"answer {i}"

    for i in range(10):
        scored(i)
    flushed = tracesim.force_flush(120)
    runtime = _runtime.current
    assert runtime is not None
    assert runtime.scoring is not None
    pool = runtime.scoring._pool
    assert pool is not None
    workers = [w.proc.pid for w in pool._all]
    stats = tracesim.scoring_stats()
    tracesim.shutdown(10)
    with open(os.path.join(folder, "pids.json"), "w") as f:
        json.dump({"pid": os.getpid(), "workers": workers, "flushed": flushed, "results": stats.results}, f)


class ReturnsDict(Evaluator):
    """A broken evaluator: ``evaluate`` returns a dict, not an `EvalResult`."""

    type_name = "returns_dict"
    requires_expected = False

    def evaluate(self, output: Any, expected: Any = None, *, input: Any = None) -> Any:
        return {"score": 1.0}


class PicklesOnce:
    """A value that pickles on odd-numbered attempts only (a value changed by another thread while
    it was pickled, say)."""

    attempts = 0

    def __reduce__(self) -> Any:
        PicklesOnce.attempts += 1
        if PicklesOnce.attempts % 2:
            raise RuntimeError("changed size during pickling")
        return (PicklesOnce, ())


class BreaksWhenBuilt(Evaluator):
    """Builds in the host; in a scoring worker process its ``__init__`` hangs or kills the process."""

    type_name = "breaks_when_built"
    requires_expected = False

    def __init__(self, *, how: str = "die", **shared: Any) -> None:
        from tracesim.evaluators._long_texts import in_worker_process

        super().__init__(**shared)
        if in_worker_process() and how == "die":
            os.kill(os.getpid(), signal.SIGKILL)
        if in_worker_process() and how == "hang":
            time.sleep(3600)

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> float:
        return 1.0


class HostOnlyHook:
    """A redact hook that works in the process that made it; in any other it does ``then``:
    ``refuse`` to be rebuilt (unpickling raises), or ``crash`` the process when first called."""

    def __init__(self, then: str) -> None:
        self.home = os.getpid()
        self.then = then

    def __call__(self, text: str, attribute: str) -> str:
        if os.getpid() != self.home:
            os.kill(os.getpid(), signal.SIGKILL)
        return text

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuilt_hook, (self.home, self.then)


def _rebuilt_hook(home: int, then: str) -> HostOnlyHook:
    if os.getpid() != home and then == "refuse":
        raise RuntimeError("this hook works in its own process only")
    hook = HostOnlyHook.__new__(HostOnlyHook)
    hook.home, hook.then = home, then
    return hook


def scrub_in_script_style(text: str, attribute: str) -> str:
    """A plain redact hook, for tests that pretend it was defined in a script."""
    return text.replace("secret", "[gone]")


def current_pool() -> Any:
    """The running configuration's pool of scoring worker processes."""
    from tracesim import _runtime

    runtime = _runtime.current
    assert runtime is not None
    assert runtime.scoring is not None
    assert runtime.scoring._pool is not None
    return runtime.scoring._pool


def worker_ready(timeout_s: float = 120.0) -> None:
    """Wait until the running configuration's first scoring worker process is up."""
    deadline = time.monotonic() + timeout_s
    while not current_pool().ready:
        assert time.monotonic() < deadline, "no worker started"
        time.sleep(0.05)


ANSWERS = {i: f"the refund for order {i} takes five to seven business days" for i in range(40)}


def support_agent() -> Any:
    """A function scored by three evaluators against ``ANSWERS`` (a third of its answers exact),
    decorated under the running configuration."""
    import tracesim
    from tracesim.evaluators import ExactMatch, Levenshtein, Rouge

    @tracesim.trace(
        evaluators=[Levenshtein(), Rouge(), ExactMatch(threshold=1.0)],
        expected=lambda order: ANSWERS[order],
    )
    def support_agent(order: int) -> str:
        if order % 3 == 0:
            return ANSWERS[order]
        return f"refunds for order {order} take about a week"

    return support_agent
