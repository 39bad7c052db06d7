"""The host's threads first: tracesim's background threads hold the interpreter in short slices.

CPython runs one thread's Python at a time. A thread that wants the interpreter while
another computes waits until that one blocks, or for the switch interval (5 ms by default)
before it asks for a hand-over; and each time the interpreter passes between two other
threads, its wait starts again. tracesim's own threads compute for milliseconds at a time
under load: the export thread encodes a batch of 512 spans (about 20 ms for scored spans),
the thread recording a worker process's results writes 96 of them from one frame. A request
handler waking from a socket read then waits up to 5 ms per wake-up, again and again while
the batch lasts, and the host's tail latency is tracesim's. Measured at 1,250 calls/s with
three evaluators scored in a worker process: 10 % of the calls late by more than 5 ms, in
bursts every 0.4 s (one export batch each), a p99 of 17-25 ms.

`Slices` is called once per item in those loops. When :data:`SLICE_S` has passed since the
last offer, it offers the interpreter to any thread waiting for it: ``time.sleep(0)`` lets it
go and takes it back after a waiting thread has had its turn, if there is one. Without a
waiting thread the offer costs about a microsecond; per item the check costs a clock read.
A loop's large copies (a 2.4 MB line joined and encoded at once) cannot be offered in the
middle: those loops work in pieces instead (`tracesim.exporters._otlp_json_encode`).
"""

from __future__ import annotations

import sys
import time

SLICE_S = 0.0002
"""How long a background loop of tracesim's holds the interpreter before offering it (200 µs);
in a scoring worker process, Python's switch interval (`in_worker_process`)."""

_clock = time.perf_counter
_offer = time.sleep


def in_worker_process() -> None:
    """Called once by a scoring worker process: there are no host threads to go first.

    A worker's own threads (the sender encoding spans and log records) would offer the
    interpreter to the worker's scoring loop, which gains nothing from it: the work is the same,
    in more pieces. Measured at 600 scored calls/s with a worker that exports over OTLP: the
    sender switched 679 times a second instead of 55 and used 117 µs of CPU per call instead of
    82, and a process sharing nothing with tracesim woke 1.6 ms late at its p99 instead of 1.0-1.1
    (the host's own p99 did not move). Slices there are Python's switch interval (5 ms by
    default), when it hands the interpreter over anyway.
    """
    global SLICE_S
    SLICE_S = max(SLICE_S, sys.getswitchinterval())


class Slices:
    """Offers the interpreter to the host's threads every :data:`SLICE_S` of a loop's work.

    Example:
        >>> offer = Slices()
        >>> for item in range(1000):
        ...     offer()  # per item: hands over when 200 µs have passed since the last offer
    """

    __slots__ = ("_due",)

    def __init__(self) -> None:
        self._due = _clock() + SLICE_S

    def __call__(self) -> None:
        if _clock() >= self._due:
            _offer(0)
            self._due = _clock() + SLICE_S
