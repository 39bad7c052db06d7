"""A scoring worker process: rebuilds evaluators from their specs and scores batches.

Started by `tracesim._scoring._processes` as ``python -c BOOT FD PATH...`` (`BOOT` sets
``sys.path`` to the host's PATH entries before anything is imported: ``-m`` would put the
working directory first, where a module of the same name as the host's could shadow it), or by
hand as ``python -m tracesim._scoring._worker_main FD``. FD is a 16-byte shared file in which
the worker keeps (token, monotonic start) of the run in progress, so the host can tell which
run hung or crashed without a message per run.

The pipes carry frames: a 4-byte big-endian length and a pickle. In: ``(specs, tokens, blob,
setup)``, where ``specs`` maps new keys to a pickled ``(EvaluatorSpec, shared settings)``,
``blob`` is the pickled list of items, one per token, and ``setup`` (sent once, with the first
handed call) is what `Finisher` writes the trace file with. An item is a run, ``(key, subject,
expected, input)``, or a handed call (`ProcessJob.item`), whose first element is the tuple of
its evaluators' keys; a handed call's evaluators run under its token, its token + 1, ... Out:
first ``("ready", pid)``, then lists of ``(token, kind, payload)``: kind `OK` with the result's
fields and field set, `RAISED` with the exception's type name and text, `NOT_BUILT` with why the
evaluator could not be rebuilt (with its key, for a handed call), `NOT_SENT` when the result does
not pickle, `NOT_RESULT` with the name of the type ``evaluate()`` returned instead of an
`EvalResult`, `UNREADABLE` for every token of a blob that does not unpickle here, `DONE` when a
handed call's span is written (its outcomes, cost and, for the host's sinks, results),
`NOT_FINISHED` when it could not be; over OTLP `SCORED` (DONE's payload) when it is scored and
`WRITTEN` once the sender thread has its span delivered or spooled. A frame with no runs
(`HURRY`) asks the sender to send at once: a flush waits. `CLOSING` says how long the host waits
for the worker to end. End of input ends the worker, once the spans it scored are written and
sent (by that deadline).
"""

from __future__ import annotations

import collections
import contextlib
import logging
import mmap
import os
import pickle
import select
import signal
import sys
import threading
import time
from typing import Any

from tracesim._scoring._processes import (
    _FLUSH_EVERY_S,
    DONE,
    NOT_BUILT,
    NOT_FINISHED,
    NOT_RESULT,
    NOT_SENT,
    OK,
    RAISED,
    RECORDS_DROPPED,
    RUNNING,
    SAID,
    SCORED,
    START,
    TOKEN,
    UNREADABLE,
    WRITTEN,
    read_frame,
    write_frame,
)

__all__ = ["main"]

_HOST_CHECK_S = 0.5
_CLOSE_S = 5.0
"""How long closing the exporters may take when the host said no deadline."""
_CLOSE_MARGIN_S = 0.3
"""Kept before the host's deadline: for the last frame (what closing said and dropped)."""


def main() -> None:
    """Serve until the host closes the pipe."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is for the host; it ends us by EOF
    # Frames use the original stdin/stdout; a print() or a C library's write lands on stderr.
    in_fd, out_fd = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    _forward_logs()
    from tracesim._host_first import in_worker_process
    from tracesim.evaluators._long_texts import enter_worker_process

    enter_worker_process()
    in_worker_process()
    with open(int(sys.argv[1]), "r+b") as shared:
        slot = mmap.mmap(shared.fileno(), RUNNING.size)
    source = os.fdopen(in_fd, "rb")
    threading.Thread(target=_watch_host, args=(os.getppid(),), name="host-watch", daemon=True).start()
    with contextlib.suppress(BrokenPipeError):  # the host is gone without closing us: nobody to tell
        _serve(source, out_fd, slot)


_SAID: collections.deque[tuple[int, str, str]] = collections.deque(maxlen=200)
"""Lines logged here and not yet sent to the host (`SAID`): the oldest go first when it fills,
counted in `_LEFT_OUT` and said with the next frame."""
_LEFT_OUT = [0]
_LINE_CHARS = 8000
"""A line is cut to this many characters (a traceback fits; a frame stays small)."""


class _ToHost(logging.Handler):
    """Keeps what this process logs for the host, which has the user's handlers: an export that
    fails here, a backend that takes no log records, a spool that fills up."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = (record.levelno, record.name, self.format(record)[:_LINE_CHARS])
            if len(_SAID) == _SAID.maxlen:
                _LEFT_OUT[0] += 1
            _SAID.append(line)
        except Exception:
            self.handleError(record)


def _forward_logs() -> None:
    """tracesim's lines from INFO and OpenTelemetry's warnings go to the host, not to stderr."""
    handler = _ToHost()
    handler.setFormatter(logging.Formatter("%(message)s"))  # a traceback, if any, follows the text
    for name, level in (("tracesim", logging.INFO), ("opentelemetry", logging.WARNING)):
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.setLevel(level)
        logger.propagate = False


def _watch_host(host: int) -> None:
    """End this process once the host is gone (this process was given to another parent): a
    run that hangs would otherwise keep it alive, as nobody is left to close its input."""
    while True:
        time.sleep(_HOST_CHECK_S)
        if os.getppid() != host:
            os._exit(0)


def _serve(source: Any, out_fd: int, slot: mmap.mmap) -> None:
    write_frame(out_fd, pickle.dumps(("ready", os.getpid())))
    handed = _Handed(slot, out_fd)
    try:
        _loop(source, out_fd, slot, {}, handed)
    finally:
        handed.close()  # the spans it wrote are flushed and the trace file closed
        dropped = handed.records_dropped()
        if _SAID or dropped:  # what closing said and dropped: the host reads it while it waits
            _send(out_fd, [(0, RECORDS_DROPPED, dropped)] if dropped else [])


def _loop(source: Any, out_fd: int, slot: mmap.mmap, evaluators: dict[int, Any], handed: _Handed) -> None:
    from tracesim.evaluators import Evaluator

    clock = time.monotonic
    token_at, start_at = TOKEN.pack_into, START.pack_into
    in_fd = source.fileno()
    results: list[tuple[int, int, Any]] = []
    since = clock()  # when the oldest result not yet sent was begun

    def flush() -> None:
        token_at(slot, 0, 0)
        handed.write(results)  # the spans scored so far, and their acknowledgements
        if results:
            _send(out_fd, results)
            results.clear()

    while True:
        pending = results or handed.pending
        if pending and (clock() - since >= _FLUSH_EVERY_S or not _input_waiting(in_fd)):
            # Nothing else to score now (or the oldest has waited long enough): the host gets
            # a few calls' results at a time while it sends one call after another, and a
            # worker kept busy writes its spans in batches.
            flush()
            pending = False
        message = read_frame(source)
        if message is None:
            flush()
            return
        if not pending:
            since = clock()
        specs, tokens, blob, setup = message
        if specs is None:  # CLOSING: the host closes this worker and waits this long for it
            handed.close_by = clock() + setup
            continue
        if not tokens and not blob:  # HURRY: a flush is waiting for the spans sent to the backend
            handed.hurry()
            continue
        if setup is not None:
            handed.setup = setup
        if specs and tokens:  # building is charged to the batch's first run, as -token (see RUNNING)
            start_at(slot, 8, clock())
            token_at(slot, 0, -tokens[0])
        for key, data in specs.items():
            try:
                evaluators[key] = Evaluator.rebuilt(*pickle.loads(data))
            except Exception as exc:
                evaluators[key] = f"{type(exc).__name__}: {exc}"
        token_at(slot, 0, 0)
        try:
            items = pickle.loads(blob)
        except Exception as exc:
            flush()
            _send(out_fd, [(token, UNREADABLE, f"{type(exc).__name__}: {exc}") for token in tokens])
            continue
        for token, item in zip(tokens, items, strict=True):
            if type(item) is bytes:  # a handed call, pickled on its own (`ProcessJob.item`)
                try:
                    item = pickle.loads(item)
                except Exception as exc:
                    results.append((token, UNREADABLE, f"{type(exc).__name__}: {exc}"))
                    continue
            if type(item[0]) is tuple:
                handed.score(token, item, evaluators, results)
            else:
                _run(token, item, evaluators, results, slot)
            if clock() - since >= _FLUSH_EVERY_S:
                flush()
                since = clock()
        token_at(slot, 0, 0)


def _input_waiting(fd: int) -> bool:
    """Whether the host has sent more already (a frame read into the buffer does not count)."""
    return bool(select.select([fd], [], [], 0)[0])


def _run(
    token: int, item: tuple[Any, ...], evaluators: dict[int, Any], results: list[Any], slot: mmap.mmap
) -> None:
    """Run one evaluator on one output; its result (or what went wrong) goes on ``results``."""
    from tracesim.evaluators import EvalResult

    key, subject, expected, value = item
    evaluator = evaluators.get(key, "no spec was sent")
    if isinstance(evaluator, str):
        results.append((token, NOT_BUILT, evaluator))
        return
    START.pack_into(slot, 8, time.monotonic())  # the time first: a token is never seen with an older time
    TOKEN.pack_into(slot, 0, token)
    try:
        result = evaluator.evaluate(subject, expected, input=value)
        if isinstance(result, EvalResult):
            results.append((token, OK, (result.__dict__, result.model_fields_set)))
        else:
            results.append((token, NOT_RESULT, type(result).__name__))
    except Exception as exc:  # evaluate() handles data errors; this is a broken evaluator
        results.append((token, RAISED, (type(exc).__name__, str(exc))))


class _Handed:
    """The handed calls of one frame: scored, then written together before they are acknowledged.

    While it writes a call's span the slot holds the call's last token (`ProcessJob.finishing`),
    so a crash there is charged to that call; a failure Python sees is said to the host
    (`NOT_FINISHED`), which then writes that call, and every later one, itself.
    """

    def __init__(self, slot: mmap.mmap, out_fd: int) -> None:
        self.slot = slot
        self.out_fd = out_fd
        self.setup: bytes | None = None
        self._finisher: Any = None
        self.close_by: float | None = None  # when the host kills this worker (`CLOSING`)
        self._failed: str | None = None  # why no span can be written here
        self._spans: list[Any] = []
        # (token, (outcomes, results for the host's sinks or None), span id, finishing)
        self._done: list[tuple[int, tuple[list[Any], Any], int, int]] = []

    def score(
        self, token: int, item: tuple[Any, ...], evaluators: dict[int, Any], results: list[Any]
    ) -> None:
        """Score one handed call; its span waits for `write`, its acknowledgement too."""
        from tracesim._metrics._counts import outcome
        from tracesim._scoring._expect import NOT_SET, handed
        from tracesim._scoring._jobs import checked, failure

        slot = self.slot
        token_at, start_at = TOKEN.pack_into, START.pack_into
        token_at(slot, 0, 0)  # not the previous run's any more
        keys, output, expected, value, data, presets, deadline, write_expected, kinds = item
        built = [evaluators.get(key, "no spec was sent") for key in keys]
        for key, evaluator in zip(keys, built, strict=True):
            if isinstance(evaluator, str):
                results.append((token, NOT_BUILT, (key, evaluator)))
                return
        finishing = token + len(keys)
        if self._finisher is None and self._failed is None:
            start_at(slot, 8, time.monotonic())
            token_at(slot, 0, finishing)
            try:
                from tracesim._scoring._handoff import Finisher

                out_fd = self.out_fd
                self._finisher = Finisher(
                    self.setup or b"",
                    # no token: only whether the log records are out (a flush asked again)
                    lambda tokens, settled: _send(out_fd, [(t, WRITTEN, settled) for t in tokens or (0,)]),
                )
            except Exception as exc:
                self._failed = f"{type(exc).__name__}: {exc}"
            token_at(slot, 0, 0)
        if self._failed is not None:
            results.append((token, NOT_FINISHED, self._failed))
            return
        clock = time.monotonic
        count = len(built)
        cut = 0 if clock() > deadline else count  # results from ``cut`` on came past max_defer_s
        scored = []
        for index, evaluator in enumerate(built):
            result = presets.get(index)
            if result is None:
                start_at(slot, 8, clock())  # the time first: a token is never seen with an older time
                token_at(slot, 0, token + index)
                try:
                    result = evaluator.evaluate(output, handed(evaluator, expected), input=value)
                except Exception as exc:  # evaluate() handles data errors; this is a broken evaluator
                    result = failure(evaluator, exc, "evaluate() raised")
                result = checked(evaluator, result)
            if cut == count and clock() > deadline:
                cut = index
            scored.append((kinds[index], result))
        start_at(slot, 8, clock())
        token_at(slot, 0, finishing)
        try:
            spans = self._finisher.finish(data, scored, expected if write_expected else NOT_SET, cut)
        except Exception as exc:
            token_at(slot, 0, 0)
            results.append((token, NOT_FINISHED, f"{type(exc).__name__}: {exc}"))
            return
        token_at(slot, 0, 0)
        self._spans.extend(spans)
        full = None
        if self._finisher.results:  # for the host's result sinks
            full = [(kind, result.__dict__, result.model_fields_set) for kind, result in scored]
        outcomes = [
            (
                result.name,
                outcome(result),
                result.score if result.status == "ok" else None,
                result.error_type if result.status == "error" else None,
                index >= cut,
            )
            for index, (_, result) in enumerate(scored)
        ]
        self._done.append((token, (outcomes, full), data[1].span_id, finishing))

    def hurry(self) -> None:
        """Spans for the OTLP backend go at once for a while (`_Sender.hurry`)."""
        finisher = self._finisher
        if finisher is not None and finisher.remote is not None:
            finisher.remote.hurry()

    def records_dropped(self) -> int:
        """The results' log records dropped since the host was last told (`RECORDS_DROPPED`)."""
        return self._finisher.log_records_lost() if self._finisher is not None else 0

    @property
    def pending(self) -> bool:
        """Whether calls are scored and their spans not yet written."""
        return bool(self._done)

    def write(self, results: list[Any]) -> None:
        """Write the spans scored so far, then add their acknowledgements to ``results``."""
        if not self._done:
            return
        slot = self.slot
        START.pack_into(slot, 8, time.monotonic())
        TOKEN.pack_into(slot, 0, self._done[0][3])  # a crash writing them is charged to the first
        remote = None
        try:
            costs, remote = self._finisher.export(self._spans)
        except Exception as exc:
            why = f"{type(exc).__name__}: {exc}"
            results.extend((token, NOT_FINISHED, why) for token, _, _, _ in self._done)
        else:
            kind = DONE if remote is None else SCORED  # SCORED: the sender says WRITTEN once kept
            for token, (outcomes, full), span_id, _ in self._done:
                results.append((token, kind, (outcomes, costs.get(span_id), full)))
            dropped = self._finisher.log_records_lost()
            if dropped:
                results.append((0, RECORDS_DROPPED, dropped))
        TOKEN.pack_into(slot, 0, 0)
        if remote is not None:
            # The host hears SCORED before the sender can say WRITTEN for these calls.
            _send(self.out_fd, results)
            results.clear()
            self._finisher.send(remote, [done[0] for done in self._done])
        self._spans = []
        self._done = []

    def close(self) -> None:
        """Close the exporters, by the host's deadline when it said one (`CLOSING`)."""
        if self._finisher is not None:
            left = _CLOSE_S if self.close_by is None else self.close_by - time.monotonic()
            self._finisher.close(max(0.0, left - _CLOSE_MARGIN_S))


_SENDING = threading.Lock()
"""Frames go out from the worker's loop and from its OTLP sender's thread (`_Sender`)."""


def _send(fd: int, results: list[tuple[int, int, Any]]) -> None:
    if _SAID:
        said = []
        with contextlib.suppress(IndexError):
            while _SAID:
                said.append((0, SAID, _SAID.popleft()))
        left_out, _LEFT_OUT[0] = _LEFT_OUT[0], 0
        if left_out:
            text = (
                f"tracesim: {left_out} earlier lines of this worker process were left out (too many at once)"
            )
            said.append((0, SAID, (logging.WARNING, "tracesim", text)))
        results = results + said
    try:
        data = pickle.dumps(results, pickle.HIGHEST_PROTOCOL)
    except Exception:  # a result with details that do not pickle: the host runs those itself
        kept = []
        for entry in results:
            token, kind, payload = entry
            try:
                pickle.dumps(entry, pickle.HIGHEST_PROTOCOL)
                kept.append(entry)
                continue
            except Exception as exc:
                why = f"{type(exc).__name__}: {exc}"
            if kind in (DONE, SCORED):  # written already: the host counts it, its sinks go without
                kept.append((token, kind, (*payload[:2], None)))
            else:
                kept.append((token, NOT_SENT, why))
        data = pickle.dumps(kept, pickle.HIGHEST_PROTOCOL)
    with _SENDING:
        write_frame(fd, data)


if __name__ == "__main__":
    main()
