"""What a background sender (MLflow assessments, Phoenix annotations) still holds at its shutdown
deadline is said: after a shutdown nobody can read its counters."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from tracesim.exporters._background import BackgroundSender, QueuedItem


class _Hangs(BackgroundSender[QueuedItem]):
    """A sender whose requests get no answer until ``answer`` is set."""

    def __init__(self) -> None:
        super().__init__(name="test", max_batch_size=10, schedule_delay_s=0.0)
        self._submitted = self._dropped = 0
        self.answer = threading.Event()
        self.sending = threading.Event()

    def _send(self, batch: list[QueuedItem]) -> None:
        self.sending.set()
        self.answer.wait(30)
        self._settle(batch)


def test_a_shutdown_past_its_deadline_says_what_is_queued_and_what_is_unanswered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sender = _Hangs()
    now = time.monotonic()
    sender._enqueue(QueuedItem(now, now + 60.0), "test result")
    assert sender.sending.wait(10)  # one is on its way, the next ones wait behind it
    for _ in range(24):
        sender._enqueue(QueuedItem(now, now + 60.0), "test result")
    try:
        with caplog.at_level(logging.WARNING, logger="tracesim"):
            assert sender.shutdown(0.3) is False
    finally:
        sender.answer.set()
    said = [r.getMessage() for r in caplog.records if "at the shutdown deadline" in r.getMessage()]
    assert said == [
        "tracesim: at the shutdown deadline 24 items of the test sender (test results) were still "
        "queued, and are lost, and 1 on their way without an answer yet"
    ]
