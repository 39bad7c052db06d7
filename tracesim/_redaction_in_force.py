"""The running configuration's redaction, where modules below the runtime can find it.

The runtime sets it when a configuration is installed (`tracesim._runtime.install`) and clears
it when none is. `tracesim._outputs` reads it for every file and stream tracesim writes, and
`tracesim._scoring` for evaluation names that nobody handed a redaction: both stand below the
runtime, which imports them, so they read this holder instead of importing the runtime.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tracesim.exporters._redacting import Redaction  # not the package: its face imports _outputs

__all__ = ["current", "set_current"]

current: Redaction | None = None
"""The installed configuration's redaction; None before `configure`, after `shutdown`, or when
tracing is disabled. Read it as ``_redaction_in_force.current`` (a plain read, no lock)."""


def set_current(redaction: Redaction | None) -> None:
    """Make ``redaction`` the one in force (None: none is)."""
    global current
    current = redaction
