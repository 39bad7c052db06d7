"""CPU evaluators in worker processes: the host's interpreter only hands runs over.

A scoring thread resolves a job's expected output as before, then gives each run of an
evaluator a worker process can rebuild (see `ProcessPool.key_for`) to this pool instead of
running it. One feeder thread, woken by the first run to come, waits `_LINGER_S` for
others and takes what came off a deque, up to `BATCH`; it pickles each batch once and writes
it to the least busy worker (at most `HELD` runs each, so the
deque keeps the rest for whichever worker is free, or alive); one reader thread per worker
turns the results it sends back into `EvalResult`s without validating them again and hands
them to the pipeline. Workers are ``python -m tracesim._scoring._worker_main`` subprocesses
over pipes, not `multiprocessing` (whose spawn re-runs the host script's top level) nor a
process-pool executor (where one dead worker fails every pending future).

Each worker keeps the token and start time of its run in progress in a 16-byte shared file,
so a monitor thread sees a run past its ``timeout_s`` (or the stuck time) without a message
per run: the worker is killed and replaced, the run gets a ``timeout`` result, and the other
runs it held go back to the front of the deque. A worker that dies (a crash, a SIGKILL from
outside) gives its runs back the same way; the run it was in is charged with the death, and
a run charged twice gets a ``worker_died`` error instead of a third worker. A worker that
cannot start twice in a row leaves the pool broken: runs go back to the threads, said once.

With ``scoring_export`` the deque also holds handed calls (`ProcessJob`): a whole call, all its
evaluators and the writing of its span, under one token per evaluator and one for the writing.
A hung evaluator of such a call gets its time-out result and the call goes back to the front of
the deque; a crash is charged to the evaluator running (a ``worker_died`` result at the second)
or, when it came while the worker built evaluators or wrote the span, to the call, which the
host finishes after the second (`_charged`).
"""

from __future__ import annotations

import collections
import contextlib
import io
import logging
import mmap
import os
import pickle
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, BinaryIO

from tracesim._host_first import Slices
from tracesim._internal_errors import WarnOnce, internal_error
from tracesim._scoring._handoff import ProcessJob
from tracesim._scoring._jobs import timeout

if TYPE_CHECKING:
    from tracesim._scoring._jobs import Job
    from tracesim.evaluators import EvalResult, Evaluator

__all__ = ["BATCH", "HELD", "ProcessPool", "ProcessRun", "read_frame", "write_frame"]

BATCH = 32
"""Most runs written to a worker in one frame."""
HELD = 2 * BATCH
"""Most runs a worker holds: the batch it scores and the next one, waiting in its pipe."""
_MAX_DEATHS = 2
"""Workers a run may take down (crash or hang) before it gets an error result instead."""
_START_LIMIT_S = 120.0
"""A worker that has not said it is ready by then is killed (a failed start)."""
_FAILED_STARTS = 2
"""Failed starts in a row after which the pool is broken and the threads score everything."""
_MONITOR_S = 0.05
_HURRY_AGAIN_S = 0.5
"""While a flush waits for a worker's log records, how often it asks the worker to try them again."""
_FEED_WAIT_S = 0.1
"""The feeder's longest sleep: `put` wakes it for new work, this only looks again (a safety net)."""
_LINGER_S = 0.005
"""How long the feeder, woken by a run, waits for others before it sends: a few calls a frame.
Measured at 600 scored calls/s (host p99 over the unscored call's, one run of 5 rounds):
1.81x sending at once, 1.58x after 2 ms, 1.46x after 5 ms (a scorer beside the host without
tracesim: 1.31x); batches gathered for 20 ms read 1.8-2.7x, for 60 ms 3.2x."""
_KNOWN_MAX = 4096
_MAX_SAID = 1000
"""Distinct lines from the workers that the host logs: a worker that logs without end is cut off."""
_MAX_FRAME = (1 << 32) - 1
"""A frame's length is 4 bytes: a batch that pickles to more goes to the threads."""
_WORKER_MODULE = "tracesim._scoring._worker_main"
_PROTOCOL = pickle.HIGHEST_PROTOCOL
_BOOT = f"import sys; sys.path[:] = sys.argv[2:]; del sys.argv[2:]; from {_WORKER_MODULE} import main; main()"
"""The worker's start: the host's ``sys.path`` exactly (given after the shared file's descriptor),
not the working directory first as ``-m`` or ``-c`` would have it."""


# ---------------------------------------------------------------- the pipes' frames

OK = 0
RAISED = 1
NOT_BUILT = 2
NOT_SENT = 3
UNREADABLE = 4
NOT_RESULT = 5
DONE = 6
"""A handed call (`ProcessJob`) is scored and written; the payload is its outcomes, the cost of
its LLM call, and its results when the host's result sinks take them."""
NOT_FINISHED = 7
"""A handed call's span could not be written in the worker (the payload says why)."""
SCORED = 8
"""A handed call is scored (the payload is DONE's) and its span is on its way to the OTLP backend:
the worker frees its place, the host keeps the call until `WRITTEN`."""
WRITTEN = 9
"""A `SCORED` call's span is kept: delivered, or in the spool directory. The payload says whether
the worker's queue of the results' log records was then empty (False: some wait on a backend
that does not answer, and a flush waits for them); token 0 carries that answer alone."""
SAID = 10
"""A line the worker logged (token 0; payload: level, logger name, text), at the end of the next
frame it sends: the host logs it on the same logger, once per pool (`ProcessPool._said`)."""
RECORDS_DROPPED = 11
"""The results' log records the worker's queue dropped since it last said (token 0; payload: the
count), for `ScoringStats.log_records_dropped`. Like `SAID`, read from a worker being closed too."""

HURRY: tuple[Any, ...] = ({}, [], b"", None)
"""A frame with no runs: a flush is waiting, send the spans held for the OTLP backend at once."""
_HURRY_FRAME = pickle.dumps(HURRY, pickle.HIGHEST_PROTOCOL)
CLOSING = None
"""In place of a frame's evaluators: the host closes the worker, and waits (the frame's last
field) that many seconds for it to end."""

RUNNING = struct.Struct("<qd")
"""The shared slot: the token of the run in progress (0: none) and when it started. The worker
writes the start time, then the token (`START`, `TOKEN`), so a token read with a time never
has a time older than its run's: a torn read can only make a run look younger. A negative
token: the worker is building the evaluators of the batch that starts with that run (a build
that hangs or crashes is charged to it, so it cannot take down workers forever)."""
TOKEN = struct.Struct("<q")
START = struct.Struct("<d")
_LENGTH = struct.Struct(">I")
_COPY_BELOW = 1 << 16
"""A frame shorter than this is written with its length in one call; a longer one in two."""
_FLUSH_EVERY_S = 0.005
"""A worker sends its results (and writes the spans it scored) once the host has sent nothing
more for it to score, or every 5 ms while it has: the host's reader then handles a few calls at
a time, a short hold of its interpreter. Measured at 600 scored calls/s, host p99 over the
unscored call's in one run: 1.67x with 5 ms, 1.92x with 20 ms (a scorer beside the host
without tracesim: 1.18x)."""


def read_frame(stream: BinaryIO) -> Any:
    """The next frame's object, or None at end of stream."""
    header = stream.read(4)
    if len(header) < 4:
        return None
    (size,) = _LENGTH.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        return None
    return pickle.loads(data)


def write_frame(fd: int, data: bytes) -> None:
    """Write one frame of pickled ``data`` to ``fd``, whole (a large one without a copy)."""
    header = _LENGTH.pack(len(data))
    for part in (header + data,) if len(data) < _COPY_BELOW else (header, data):
        view = memoryview(part)
        while view:
            view = view[os.write(fd, view) :]


class ProcessRun:
    """One evaluator run for a worker: the job, what it scores, and its worker deaths so far.

    ``given`` is the job's expected value as the pipeline resolved it (for a run given back to
    the threads); ``expected`` is the evaluator's part of it, which the worker is sent.
    """

    __slots__ = (
        "deaths",
        "evaluator",
        "expected",
        "given",
        "job",
        "key",
        "solo",
        "subject",
        "token",
        "value",
    )

    def __init__(
        self, job: Job, evaluator: Evaluator, key: int, subject: Any, given: Any, expected: Any, value: Any
    ) -> None:
        self.job = job
        self.evaluator = evaluator
        self.key = key
        self.subject = subject
        self.given = given
        self.expected = expected
        self.value = value
        self.token = 0
        self.deaths = 0
        self.solo = False  # sent alone: its batch did not unpickle in the worker

    width = 1
    """Pool tokens it takes (a `ProcessJob` takes one per evaluator)."""

    @property
    def keys(self) -> tuple[int]:
        return (self.key,)

    @property
    def name(self) -> str:
        return self.evaluator.name

    def limit(self, token: int, stuck_after_s: float) -> float:
        """How long it may run."""
        return self.evaluator.timeout_s or stuck_after_s

    def item(self) -> tuple[Any, ...]:
        """What the worker is sent for it."""
        return (self.key, self.subject, self.expected, self.value)


class _Worker:
    __slots__ = (
        "gone",
        "has_setup",
        "held",
        "known",
        "load",
        "logs_behind",
        "proc",
        "reader",
        "ready",
        "slot",
        "started",
        "unwritten",
        "write_lock",
    )

    def __init__(self, proc: subprocess.Popen[bytes], slot: mmap.mmap) -> None:
        self.proc = proc
        self.slot = slot
        self.held: dict[int, ProcessRun | ProcessJob] = {}  # by token (a job under each of its tokens)
        self.known: set[int] = set()  # spec keys this worker was sent
        self.has_setup = False  # it was sent the setup that finishes handed calls
        self.load = 0  # evaluator runs it holds (a handed call's: one per evaluator)
        self.unwritten: dict[int, ProcessJob] = {}  # scored, span on its way (SCORED), by token
        self.logs_behind = False  # its last WRITTEN: log records still queued there
        self.ready = False
        self.gone = False
        self.started = time.monotonic()
        self.write_lock = threading.Lock()
        self.reader: threading.Thread | None = None

    def running(self) -> tuple[int, float]:
        """The token and start time of the run in progress (token 0: none)."""
        try:
            token = TOKEN.unpack_from(self.slot, 0)[0]
            (since,) = START.unpack_from(self.slot, 8)
            again = TOKEN.unpack_from(self.slot, 0)[0]
        except ValueError:  # the slot is closed: the worker is gone
            return 0, 0.0
        return (token, since) if token == again and since > 0.0 else (0, 0.0)


class ProcessPool:
    """Worker processes scoring the runs of evaluators they can rebuild. Never raises into callers.

    ``complete(job, evaluator, result)`` records a result (the pipeline's); ``on_thread(run)``
    gives a run back to the scoring threads (its evaluator could not be rebuilt, its data or
    result does not pickle, or the pool is broken).
    """

    def __init__(
        self,
        size: int,
        *,
        complete: Callable[[Job, Evaluator, EvalResult], None],
        on_thread: Callable[[ProcessRun | ProcessJob], None],
        stuck_after_s: float,
        warnings: WarnOnce,
        grow_to: int | None = None,
        done: Callable[[ProcessJob, int, Any], None] | None = None,
        setup: bytes | None = None,
        records_dropped: Callable[[int], None] | None = None,
    ) -> None:
        self.size = size
        self.grow_to = max(size, grow_to or size)
        self._complete = complete
        self._on_thread = on_thread
        self._done = done
        self._records_dropped = records_dropped
        self.setup = setup
        """What workers finish handed calls with (`tracesim._scoring._handoff.Finisher`)."""
        self.finishes = setup is not None
        """Workers write handed calls' spans; False once one could not (the host writes them)."""
        self.stuck_after_s = stuck_after_s
        self._warnings = warnings
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._queue: collections.deque[ProcessRun | ProcessJob] = collections.deque()
        self._sending: dict[int, ProcessJob] = {}  # scored calls whose span no worker has sent yet
        self._workers: list[_Worker] = []
        self._all: list[_Worker] = []  # every worker started, for close() and fork
        self._next_token = 1
        self._known: dict[int, tuple[Evaluator, int | None, dict[str, Any]]] = {}
        self._keys: dict[bytes, int] = {}
        self._specs: dict[int, bytes] = {}  # pickled (spec, shared settings), by key
        self._refused: set[int] = set()
        self._takes: dict[int, tuple[Evaluator, bool]] = {}
        self._feeder: threading.Thread | None = None
        self._monitor: threading.Thread | None = None
        self._failed_starts = 0
        self._sleeping = False
        self._starving = False  # the feeder waits for work: a put wakes it
        self._woken = False  # by a put: it lingers to take what comes meanwhile (_LINGER_S)
        self.started = False
        self.broken = False
        self.closing = False
        self.deaths = 0
        """Workers lost to a crash or a kill (hung runs included), for tests and stats."""
        self._said_before: set[tuple[str, str]] = set()  # the workers' lines logged here
        self._said_lock = threading.Lock()  # one reader thread per worker

    # ------------------------------------------------------------ admission

    @property
    def ready(self) -> bool:
        """True when at least one worker has started and can take runs."""
        return any(w.ready for w in self._workers)

    def key_for(self, evaluator: Evaluator) -> int | None:
        """The key under which workers rebuild ``evaluator``, or None when it stays on threads
        (said once per evaluator name, with the reason and what to change)."""
        entry = self._known.get(id(evaluator))
        settings = evaluator.shared_settings()  # changed since (ev.threshold = ...): rebuilt anew
        if entry is not None and entry[0] is evaluator and entry[2] == settings:
            key = entry[1]
        else:
            key = self._admit(evaluator)
            if len(self._known) >= _KNOWN_MAX:
                self._known.clear()
            self._known[id(evaluator)] = (evaluator, key, settings)
        if key is not None and key in self._refused:
            return None
        return key

    def takes(self, evaluator: Evaluator) -> bool:
        """True when a worker process could run ``evaluator`` (nothing is said): what ``auto``
        counts toward starting a worker."""
        entry = self._takes.get(id(evaluator))
        if entry is None or entry[0] is not evaluator:
            if len(self._takes) >= _KNOWN_MAX:
                self._takes.clear()
            entry = self._takes[id(evaluator)] = (evaluator, self._admission(evaluator)[0] is not None)
        return entry[1]

    def _admit(self, evaluator: Evaluator) -> int | None:
        key, why = self._admission(evaluator)
        if why is not None:
            self._say_thread(evaluator.name, why)
        return key

    def _admission(self, evaluator: Evaluator) -> tuple[int | None, str | None]:
        """The key for ``evaluator``, or None and why it stays on threads (None: it was chosen)."""
        # Model-backed evaluators wait on the network: threads. Looked up, not imported: with the
        # module not loaded there is no such evaluator, and the host's heap stays without asyncio.
        models = sys.modules.get("tracesim.evaluators._model_evaluator")
        model_backed = models is not None and isinstance(evaluator, models.ModelEvaluator)
        if evaluator.runs_in == "thread" or evaluator.is_async or model_backed:
            return None, None
        spec = evaluator.spec
        why = None
        data = b""
        if spec is None:
            why = (
                "its arguments were not recorded (its __init__ was added after the class was made, as "
                "@dataclass does); define __init__ in the class body"
            )
        elif spec.module == "__main__" or spec.module.startswith("__mp_main__"):
            why = "its class is defined in the script (__main__); a worker imports classes by module: move it"
        elif "<locals>" in spec.qualname:
            why = "its class is defined inside a function; a worker imports classes by name: move it out"
        elif _found(spec.module, spec.qualname) is not type(evaluator):
            why = f"{spec.module}.{spec.qualname} does not name its class"
        else:
            try:
                data = pickle.dumps((spec, evaluator.shared_settings()), pickle.HIGHEST_PROTOCOL)
            except Exception as exc:
                why = (
                    f"its arguments do not pickle ({type(exc).__name__}: {exc}); give it picklable ones "
                    "(plain data, module-level functions), or subclass Evaluator in a module for @evaluator"
                )
        if why is not None:
            return None, why
        with self._lock:
            key = self._keys.get(data)
            if key is None:
                key = self._keys[data] = len(self._keys) + 1
                self._specs[key] = data
        return key, None

    def _say_thread(self, name: str, why: str) -> None:
        self._warnings.warn(
            f"thread:{name}",
            "tracesim: evaluator %r runs on the scoring threads, not in a worker process: %s "
            "(runs_in='thread' on it says this is intended and silences this line).",
            name,
            why,
        )

    # ------------------------------------------------------------ the pipeline's side

    def start(self) -> None:
        """Start the feeder, which starts the workers (in the background: the caller never waits)."""
        if self.started:
            return
        with self._lock:
            if self.started or self.closing:
                return
            self.started = True
            self._feeder = threading.Thread(target=self._feed, name="tracesim-scoring-feeder", daemon=True)
            self._feeder.start()

    def put(self, run: ProcessRun | ProcessJob) -> None:
        """Queue ``run`` for a worker; wake the feeder when it waits for work.

        The feeder then waits `_LINGER_S` and sends what came meanwhile: a few calls a frame,
        so the host's threads hold the interpreter a few calls at a time (see `_FLUSH_EVERY_S`).
        """
        self._queue.append(run)
        if self._starving:  # read after the append: see _next_batch
            with self._wake:
                self._wake.notify_all()
        if self.broken:  # broke since the caller looked: the threads take it
            self._release_all()

    def grow(self) -> None:
        """Add a worker (up to ``grow_to``) when runs keep waiting for one."""
        waiting = self.backlog()
        with self._lock:
            if self.size < self.grow_to and waiting > HELD:
                self.size += 1
                self._wake.notify_all()

    def backlog(self) -> int:
        """Evaluator runs waiting for a worker (a handed call counts one per evaluator, as a
        worker's `HELD` counts them)."""
        return sum(len(run.keys) for run in list(self._queue))  # a copy in C: callers append meanwhile

    # ------------------------------------------------------------ feeder

    def _feed(self) -> None:
        try:
            while True:
                worker, batch, specs = self._next_batch()
                if worker is None:
                    return
                self._send(worker, batch, specs)
        except Exception:
            internal_error("scoring: process feeder")

    def _next_batch(self) -> tuple[Any, list[ProcessRun | ProcessJob], dict[int, Any]]:
        while True:
            spawn = linger = False
            with self._lock:
                if self.closing:
                    return None, [], {}
                if self.broken:
                    self._release_all()
                    return None, [], {}
                if len(self._workers) < self.size:
                    spawn = True
                else:
                    free = [w for w in self._workers if w.ready and w.load < HELD]
                    # Set before the queue is looked at: a put that appends after the look
                    # sees it and wakes this thread (put does not take the lock to append).
                    self._starving = True
                    if free and self._queue:
                        self._starving = False
                        if self._woken and len(self._queue) < BATCH:
                            self._woken = False
                            linger = True
                        else:
                            worker = min(free, key=lambda w: w.load)
                            return (worker, *self._take(worker))
                    else:
                        if self._queue:
                            self._starving = False  # waiting for a worker: the reader wakes it
                        self._sleeping = True
                        self._woken = self._wake.wait(_FEED_WAIT_S) and self._starving
                        self._sleeping = self._starving = False
                        continue
            if spawn:
                self._spawn()
            elif linger:
                time.sleep(_LINGER_S)

    def _take(self, worker: _Worker) -> tuple[list[ProcessRun | ProcessJob], dict[int, bytes]]:
        batch: list[ProcessRun | ProcessJob] = []
        specs: dict[int, bytes] = {}
        held = worker.held
        queue = self._queue
        while queue and len(batch) < BATCH and worker.load < HELD:
            if queue[0].solo and batch:
                break  # a run whose batch did not unpickle goes alone, to find the culprit
            run = queue.popleft()
            run.token = token = self._next_token
            self._next_token += run.width
            for each in range(token, token + run.width):
                held[each] = run
            worker.load += len(run.keys)
            batch.append(run)
            for key in run.keys:
                if key not in worker.known:
                    worker.known.add(key)
                    specs[key] = self._specs[key]
            if run.solo:
                break
        return batch, specs

    def _send(self, worker: _Worker, batch: list[ProcessRun | ProcessJob], specs: dict[int, bytes]) -> None:
        try:
            data = self._frame(worker, batch, specs)
        except Exception as exc:  # a value that pickled once and not again, a frame past 4 GiB, ...
            data = None
            self._unsent(worker, batch, exc)
        if data is None:
            with self._lock:  # not sent: the worker must be sent these specs with its next runs
                worker.known.difference_update(specs)
                worker.has_setup = False
            return
        try:
            with worker.write_lock:
                if worker.gone:
                    return  # its runs were given back already
                stdin = worker.proc.stdin
                assert stdin is not None
                write_frame(stdin.fileno(), data)
        except (OSError, ValueError):
            self._lost(worker)  # the reader sees the end of its output too; the first one counts

    def wait_written(self, deadline: float, *, log_records: bool = True) -> bool:
        """Wait until the span of every scored call is sent and (``log_records``) the workers'
        log records are out, or until ``deadline`` (a `time.monotonic` value); False if not."""
        hurried: float | None = None
        while True:
            with self._lock:
                behind = log_records and self._logs_behind()
                if not self._sending and not behind:
                    return True
                now = time.monotonic()
                if now >= deadline:
                    return False
                if hurried is not None and not (behind and now - hurried >= _HURRY_AGAIN_S):
                    self._wake.wait(min(deadline - now, _FEED_WAIT_S))
                    continue
            # Workers gather spans for the OTLP backend: a flush does not wait for that. A worker
            # whose log records are still behind tries them again each time it is hurried.
            self.hurry()
            hurried = now

    def _logs_behind(self) -> bool:
        return any(worker.logs_behind for worker in self._workers)

    def sent_elsewhere(self, unit: ProcessJob) -> None:
        """The host sent ``unit``'s span itself (no worker could): `wait_written` stops waiting for it."""
        with self._lock:
            self._sending.pop(id(unit), None)
            if not self._sending:
                self._wake.notify_all()

    def unwritten(self) -> list[ProcessJob]:
        """Scored calls whose span no worker sent, after `close`: their workers were stopped."""
        with self._lock:
            found = list(self._sending.values())
            self._sending.clear()
        return found

    def hurry(self) -> None:
        """Tell every worker to send its spans to the OTLP backend at once for a while, not
        after gathering them (a flush waits for them). Never blocks on a worker for long: the
        frame is a few bytes."""
        with self._lock:
            workers = [w for w in self._workers if w.ready and (w.held or w.unwritten or w.logs_behind)]
        for worker in workers:
            try:
                with worker.write_lock:
                    stdin = worker.proc.stdin
                    if worker.gone or stdin is None:
                        continue
                    write_frame(stdin.fileno(), _HURRY_FRAME)
            except (OSError, ValueError):
                pass  # its reader sees it end

    def _frame(
        self, worker: _Worker, batch: list[ProcessRun | ProcessJob], specs: dict[int, bytes]
    ) -> bytes | None:
        """The frame of ``batch`` (None when no run of it pickles: those went to the threads)."""
        # The runs' data in a blob of its own: a worker that cannot unpickle it (a class only
        # the host's __main__ has) still reads the tokens, and says so for each run.
        items = [r.item() for r in batch]
        try:
            blob = pickle.dumps(items, pickle.HIGHEST_PROTOCOL)
        except Exception:
            batch[:] = self._picklable(worker, batch)
            if not batch:
                return None
            blob = pickle.dumps([r.item() for r in batch], pickle.HIGHEST_PROTOCOL)
        setup = None
        if not worker.has_setup and any(type(r) is ProcessJob for r in batch):
            setup = self.setup
            worker.has_setup = True
        data = pickle.dumps((specs, [r.token for r in batch], blob, setup), pickle.HIGHEST_PROTOCOL)
        if len(data) > _MAX_FRAME:
            raise ValueError(f"a batch of {len(batch)} runs pickles to {len(data):,} bytes")
        return data

    def _unsent(self, worker: _Worker, batch: list[ProcessRun | ProcessJob], exc: Exception) -> None:
        """A batch that could not be written: its runs (those still held) go to the threads."""
        with self._lock:
            back = [run for run in batch if _release(worker, run)]
        if not back:
            return
        self._warnings.warn(
            "unsent",
            "tracesim: a batch of runs for a scoring worker process could not be written (%s); its "
            "runs are scored on the scoring threads.",
            type(exc).__name__,
        )
        for run in back:
            self._on_thread(run)

    def _picklable(
        self, worker: _Worker, batch: list[ProcessRun | ProcessJob]
    ) -> list[ProcessRun | ProcessJob]:
        """The runs of ``batch`` whose data pickles; the others go to the threads, said once."""
        kept = []
        for run in batch:
            try:
                pickle.dumps(run.item(), pickle.HIGHEST_PROTOCOL)
            except Exception as exc:
                with self._lock:
                    _release(worker, run)
                self._warnings.warn(
                    f"data:{run.name}",
                    "tracesim: a call scored by %r has an output, expected output or input that does not "
                    "pickle (%s: %s); such calls are scored on the scoring threads.",
                    run.name,
                    type(exc).__name__,
                    exc,
                )
                self._on_thread(run)
                continue
            kept.append(run)
        return kept

    # ------------------------------------------------------------ workers

    def _spawn(self) -> None:
        """Start one worker process (not waiting for it to be ready: its reader waits)."""
        try:
            folder = "/dev/shm" if os.path.isdir("/dev/shm") else None
            with tempfile.TemporaryFile(dir=folder) as shared:
                shared.truncate(RUNNING.size)
                slot = mmap.mmap(shared.fileno(), RUNNING.size)
                path = [p for p in sys.path if isinstance(p, str)]
                proc = subprocess.Popen(
                    [sys.executable, "-c", _BOOT, str(shared.fileno()), *path],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    bufsize=0,
                    pass_fds=(shared.fileno(),),
                    # not in the terminal's foreground group: Ctrl+C is the host's (a worker still
                    # importing would print a KeyboardInterrupt); workers end when their input closes
                    start_new_session=True,
                )
        except Exception as exc:
            self._start_failed(f"{type(exc).__name__}: {exc}")
            return
        worker = _Worker(proc, slot)
        with self._lock:
            self._workers.append(worker)
            self._all.append(worker)
            closing = self.closing
        worker.reader = threading.Thread(
            target=self._read, args=(worker,), name="tracesim-scoring-reader", daemon=True
        )
        worker.reader.start()
        if self._monitor is None:
            self._monitor = threading.Thread(target=self._watch, name="tracesim-scoring-monitor", daemon=True)
            self._monitor.start()
        if closing:
            self._end(worker, 0.0)

    def _read(self, worker: _Worker) -> None:
        stdout = worker.proc.stdout
        assert stdout is not None
        stream: Any = io.BufferedReader(stdout, 1 << 16)
        try:
            hello = read_frame(stream)
            if isinstance(hello, tuple) and hello[:1] == ("ready",):
                with self._lock:
                    worker.ready = True
                    self._failed_starts = 0
                    self._wake.notify_all()
                self._serve(worker, stream)
        except Exception:
            internal_error("scoring: reading a worker's results")
        finally:
            self._lost(worker)
            self._reap(worker, stream)

    def _serve(self, worker: _Worker, stream: Any) -> None:
        complete = self._complete
        while True:
            results = read_frame(stream)
            if results is None:
                return
            done: list[tuple[Any, int, Any]] = []
            said: list[tuple[int, str, str]] = []
            dropped = 0
            with self._lock:
                held = worker.held
                gone = worker.gone  # its runs were given back: drain until it ends, hearing what it says
                for token, kind, payload in results:
                    if token == 0:  # no call's: what it says, what it dropped, whether its records are out
                        if kind == SAID:
                            said.append(payload)
                        elif kind == RECORDS_DROPPED:
                            dropped += payload
                        elif kind == WRITTEN and not gone:
                            self._heard_logs(worker, payload)
                        continue
                    if gone:
                        continue
                    if kind == WRITTEN:  # the call was counted at SCORED: only the wait is over
                        self._heard_logs(worker, payload)
                        unit = worker.unwritten.pop(token, None)
                        if unit is not None and unit.token == token:
                            self._sending.pop(id(unit), None)
                            if not self._sending:
                                self._wake.notify_all()  # `wait_written`
                        continue
                    run = held.get(token)
                    if run is not None and run.token == token:
                        _release(worker, run)
                        if kind == SCORED:
                            worker.unwritten[token] = run  # type: ignore[assignment]
                            self._sending[id(run)] = run  # type: ignore[assignment]
                        done.append((run, kind, payload))
                if self._sleeping and not self._starving:  # the feeder waits for a worker, not for work
                    self._wake.notify_all()
            if said:
                self._said(worker, said)
            if dropped and self._records_dropped is not None:
                self._records_dropped(dropped)
            offer = Slices()  # 32 runs' results are ms of recording: the host's threads go first
            for run, kind, payload in done:
                offer()
                if kind == OK:
                    complete(run.job, run.evaluator, _result(*payload))
                elif kind in (DONE, SCORED) and self._done is not None:
                    self._done(run, kind, payload)
                    if kind == SCORED:
                        run.scored()  # held until WRITTEN: only its bytes
                else:
                    self._odd(run, kind, payload)

    def _heard_logs(self, worker: _Worker, settled: Any) -> None:
        """A `WRITTEN` said whether ``worker``'s log records were out (False: some wait). Locked."""
        behind = settled is False
        if behind != worker.logs_behind:
            worker.logs_behind = behind
            self._wake.notify_all()  # `wait_written`

    def _said(self, worker: _Worker, lines: list[tuple[int, str, str]]) -> None:
        """Log what a worker logged, on the logger it used, with its process named; each line once
        (two workers, or a restarted one, say the same things)."""
        for level, name, text in lines:
            with self._said_lock:
                known = self._said_before
                if (name, text) in known or len(known) > _MAX_SAID:
                    continue
                known.add((name, text))
                full = len(known) > _MAX_SAID
            if full:
                self._warnings.warn(
                    "said-enough",
                    "tracesim: the scoring worker processes logged %d different lines; later ones "
                    "are not logged here",
                    _MAX_SAID,
                )
                continue
            logging.getLogger(name).log(level, "%s (in scoring worker process %d)", text, worker.proc.pid)

    def _requeue(self, run: ProcessRun | ProcessJob) -> None:
        """Put ``run`` first in the queue again, and wake the feeder (asleep for want of work,
        it would otherwise wait out `_FEED_WAIT_S`)."""
        with self._lock:
            self._queue.appendleft(run)
            self._wake.notify_all()

    def _odd(self, run: ProcessRun | ProcessJob, kind: int, payload: Any) -> None:
        if type(run) is ProcessJob:
            self._odd_job(run, kind, payload)
            return
        assert isinstance(run, ProcessRun)
        evaluator = run.evaluator
        if kind == RAISED:
            from tracesim.evaluators import EvalResult

            name, text = payload
            result = EvalResult(
                name=evaluator.name,
                threshold=evaluator.threshold,
                status="error",
                error=f"evaluate() raised: {name}: {text}",
                error_type=name,
            )
            self._complete(run.job, evaluator, result)
            return
        if kind == NOT_RESULT:  # the threads' words for it (`checked`)
            from tracesim._scoring._jobs import failure

            failed = TypeError(f"returned {payload}, not an EvalResult")
            self._complete(run.job, evaluator, failure(evaluator, failed, "evaluate()"))
            return
        if kind == NOT_BUILT:
            self._refused.add(run.key)
            self._say_thread(evaluator.name, f"a worker process could not rebuild it ({payload})")
        elif kind == UNREADABLE:
            if not run.solo:
                run.solo = True
                self._requeue(run)  # alone this time: the culprit is found
                return
            self._warnings.warn(
                f"unreadable:{evaluator.name}",
                "tracesim: a call scored by %r has an output, expected output or input that a worker "
                "process cannot unpickle (%s; a class defined in the script?); such calls are scored "
                "on the scoring threads.",
                evaluator.name,
                payload,
            )
        elif kind == NOT_SENT:
            self._warnings.warn(
                f"result:{evaluator.name}",
                "tracesim: a result of %r does not pickle (%s); such runs are scored on the scoring threads.",
                evaluator.name,
                payload,
            )
        self._on_thread(run)

    def _odd_job(self, run: ProcessJob, kind: int, payload: Any) -> None:
        """A handed call the worker could not finish: it goes back to the host's path."""
        if kind == NOT_FINISHED:
            self.finishes = False
            self._warnings.warn(
                "not-finished",
                "tracesim: a scoring worker process could not write a scored call's span (%s); your "
                "process writes them from now on, with the same results (scoring_export=host does "
                "so from the start).",
                payload,
            )
        elif kind == NOT_BUILT:
            key, why = payload
            self._refused.add(key)
            names = [e.name for e, k in zip(run.evaluators, run.keys, strict=True) if k == key]
            self._say_thread(
                names[0] if names else run.name, f"a worker process could not rebuild it ({why})"
            )
        elif kind == UNREADABLE:
            if not run.solo:
                run.solo = True
                self._requeue(run)
                return
            self._warnings.warn(
                f"unreadable:{run.name}",
                "tracesim: a call scored by %r has an output, expected output or input that a worker "
                "process cannot unpickle (%s; a class defined in the script?); such calls are scored "
                "on the scoring threads.",
                run.name,
                payload,
            )
        self._on_thread(run)

    def _watch(self) -> None:
        """Kill a worker whose run is past its time, or that does not start."""
        while True:
            time.sleep(_MONITOR_S)
            with self._lock:
                if self.closing or self.broken:
                    return
                workers = list(self._workers)
            now = time.monotonic()
            for worker in workers:
                if not worker.ready:
                    if now - worker.started > _START_LIMIT_S:
                        self._lost(worker)
                    continue
                if not worker.held:
                    continue
                token, since = worker.running()
                run = worker.held.get(abs(token))
                if run is None:
                    continue
                # building the evaluators (-token) has the pool's stuck time, not the run's timeout_s
                limit = self.stuck_after_s if token < 0 else run.limit(token, self.stuck_after_s)
                if now - since > limit:
                    self._lost(worker, hung=run, limit_s=limit, hung_token=token)

    def _lost(
        self,
        worker: _Worker,
        hung: ProcessRun | ProcessJob | None = None,
        limit_s: float = 0.0,
        hung_token: int = 0,
    ) -> None:
        """``worker`` is gone (or must go): kill it and give its runs back. Once per worker.

        A handed call (`ProcessJob`) goes back whole, with the run that hung (or took down a
        second worker) decided: the next worker writes that result and runs the others.
        """
        died: list[ProcessRun] = []
        failed_start = False
        hung_name = ""
        with self._lock:
            if worker.gone:
                return
            worker.gone = True
            if worker in self._workers:
                self._workers.remove(worker)
            runs = list({id(run): run for run in worker.held.values()}.values())
            worker.held.clear()
            sent = list(worker.unwritten.values())  # scored, not yet kept: the next worker sends them
            worker.unwritten.clear()
            worker.load = 0
            running = 0  # a negative token: the worker was building the evaluators of its batch
            if hung is None and worker.ready:
                running = worker.running()[0]
            back: list[ProcessRun | ProcessJob] = []
            home: list[ProcessJob] = []  # handed calls the host finishes after all
            for run in runs:
                if type(run) is ProcessJob:
                    token = hung_token if run is hung else running
                    if run is hung or (token and run.token <= abs(token) < run.token + run.width):
                        goes, named = _charged(run, token, run is hung, limit_s)
                        hung_name = named or hung_name
                        if goes == "home":
                            home.append(run)
                            continue
                    back.append(run)
                    continue
                if run is hung:
                    continue
                if running and run.token == abs(running):  # a crash while building its evaluator counts too
                    run.deaths += 1
                    if run.deaths >= _MAX_DEATHS:
                        died.append(run)  # type: ignore[arg-type]
                        continue
                back.append(run)
            back.extend(sent)
            self._queue.extendleft(reversed(back))
            if not worker.ready:
                failed_start = not self.closing
            elif not self.closing:
                self.deaths += 1
            self._wake.notify_all()
        if worker.proc.poll() is None:
            with contextlib.suppress(OSError):
                worker.proc.kill()
        if failed_start:
            self._start_failed(f"exit status {worker.proc.wait()}")
        if home:  # a worker cannot write spans here (a crash, twice): the host writes them from now on
            self.finishes = False
            self._warnings.warn(
                "not-finished",
                "tracesim: scoring worker processes ended twice while writing a scored call's span; "
                "your process writes them from now on, with the same results (scoring_export=host "
                "does so from the start).",
            )
        for unit in home:
            self._on_thread(unit)
        if type(hung) is ProcessRun:
            hung_name = hung.evaluator.name
        if hung is not None and not hung_name:
            self._warnings.warn(
                "hung-finishing",
                "tracesim: a scoring worker process took more than %s s to build its evaluators or "
                "to write a scored call's span; it was stopped and replaced (a call that stops two "
                "workers this way is finished by your process).",
                limit_s,
            )
        elif hung is not None:
            if type(hung) is ProcessRun:
                self._complete(hung.job, hung.evaluator, timeout(hung.evaluator, limit_s))
            self._warnings.warn(
                f"hung:{hung_name}",
                "tracesim: a run of evaluator %r passed its %s s limit in a scoring worker process; the "
                "worker was stopped and replaced, the run has a timeout result, its other runs went to "
                "another worker.",
                hung_name,
                limit_s,
            )
        for run in died:
            self._complete(run.job, run.evaluator, _died(run.evaluator))

    def _start_failed(self, why: str) -> None:
        with self._lock:
            self._failed_starts += 1
            broken = self._failed_starts >= _FAILED_STARTS and not self.closing
            if broken:
                self.broken = True
                self._wake.notify_all()
        if broken:
            self._warnings.warn(
                "no-processes",
                "tracesim: scoring worker processes could not start (%s; run `%s -m %s` to see why); "
                "evaluators run on the scoring threads. Set scoring_processes=0 to not try.",
                why,
                sys.executable,
                _WORKER_MODULE,
            )
            self._release_all()

    def _release_all(self) -> None:
        """Broken: every waiting run goes to the threads."""
        while True:
            try:
                run = self._queue.popleft()
            except IndexError:
                return
            self._on_thread(run)

    def _reap(self, worker: _Worker, stream: Any) -> None:
        """Wait for the ended process and close its pipes (no zombie, no ResourceWarning)."""
        proc = worker.proc
        with contextlib.suppress(Exception):
            proc.wait()
        with worker.write_lock:
            if proc.stdin is not None:
                proc.stdin.close()
        stream.close()
        worker.slot.close()

    # ------------------------------------------------------------ close, fork

    def close(self, timeout_s: float) -> None:
        """Stop the workers: end of input (an idle worker ends at once), killed at ``timeout_s``.

        A worker still holding runs is killed at once: the pipeline closes the pool after its
        drain, so those runs are past the deadline (hung, or too late for their spans). So is
        one still starting (its imports take seconds and it holds nothing).
        """
        deadline = time.monotonic() + max(0.0, timeout_s)
        with self._lock:
            self.closing = True
            workers = list(self._all)
            busy = [w for w in self._workers if w.held or not w.ready]
            self._queue.clear()
            self._wake.notify_all()
        for worker in busy:
            with contextlib.suppress(OSError):
                worker.proc.kill()
        closing = pickle.dumps((CLOSING, [], b"", max(0.0, deadline - time.monotonic())), _PROTOCOL)
        for worker in workers:
            with worker.write_lock:
                stdin = worker.proc.stdin
                if stdin is not None and worker.ready and worker not in busy and not worker.gone:
                    with contextlib.suppress(OSError, ValueError):  # its deadline: a few bytes, read
                        write_frame(stdin.fileno(), closing)  # by an idle worker at once
                worker.gone = True
                if stdin is not None:
                    with contextlib.suppress(OSError):
                        stdin.close()
        for worker in workers:
            self._end(worker, deadline - time.monotonic())
        for worker in workers:
            if worker.reader is not None and worker.reader is not threading.current_thread():
                worker.reader.join(max(0.05, deadline - time.monotonic()))

    def _end(self, worker: _Worker, wait_s: float) -> None:
        try:
            worker.proc.wait(max(0.0, wait_s))
        except subprocess.TimeoutExpired:
            try:
                worker.proc.kill()
                worker.proc.wait(1.0)
            except Exception:
                pass

    def forsake(self) -> None:
        """In a forked child: let go of the parent's workers without touching them (the child
        closes its copies of the pipes and never waits for processes that are not its own)."""
        for worker in self._all:
            proc = worker.proc
            proc.returncode = -1  # not ours to wait for: no "still running" warning either
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:  # raw files (bufsize=0): closing writes nothing
                    with contextlib.suppress(OSError):
                        stream.close()
            with contextlib.suppress(Exception):
                worker.slot.close()
        self._all.clear()
        self._workers.clear()


def _charged(run: ProcessJob, token: int, hung: bool, limit_s: float) -> tuple[str, str]:
    """What becomes of a handed call whose worker hung or died under ``token``: ``back`` to a
    worker or ``home`` to the host, and the name of the evaluator that hung ("" for none).

    An evaluator past its time gets its time-out result and the call goes on without it. A
    crash in an evaluator's run counts as a death; at `_MAX_DEATHS` that evaluator gets a
    ``worker_died`` result instead of another worker. A crash or hang while the worker built
    the evaluators (a negative token) or wrote the span has no result to give: at `_MAX_DEATHS`
    the call goes to the host, which scores and writes it as for any call."""
    index = run.index(token) if token > 0 else None
    if index is not None and hung:
        evaluator = run.evaluators[index]
        run.presets[index] = timeout(evaluator, limit_s)
        return "back", evaluator.name
    run.deaths += 1
    if run.deaths < _MAX_DEATHS:
        return "back", ""
    if index is None:
        return "home", ""
    run.presets[index] = _died(run.evaluators[index])
    run.deaths = 0
    return "back", ""


def _release(worker: _Worker, run: ProcessRun | ProcessJob) -> bool:
    """Take ``run`` off ``worker`` (every token of it); False when the worker no longer held it."""
    held = worker.held
    if held.get(run.token) is not run:
        return False
    for token in range(run.token, run.token + run.width):
        held.pop(token, None)
    worker.load -= len(run.keys)
    return True


def _found(module: str, qualname: str) -> Any:
    target: Any = sys.modules.get(module)
    for part in qualname.split("."):
        target = getattr(target, part, None)
    return target


def _result(values: dict[str, Any], fields_set: Any) -> EvalResult:
    from tracesim.evaluators._result import _trusted

    return _trusted(values, fields_set)


def _died(evaluator: Evaluator) -> EvalResult:
    from tracesim.evaluators import EvalResult

    return EvalResult(
        name=evaluator.name,
        threshold=evaluator.threshold,
        status="error",
        error=f"the scoring worker process ended while running it, {_MAX_DEATHS} times; not run again",
        error_type="worker_died",
    )
