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
    """Scores 1.0 and says which process scored it (``details["pid"]``)."""

    type_name = "where_pid"
    requires_expected = False

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Any:
        from tracesim.evaluators import Measurement

        return Measurement(1.0, {"pid": os.getpid()})
