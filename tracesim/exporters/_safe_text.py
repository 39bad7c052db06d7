"""Forwarder: terminal-safe text moved to `tracesim._terminal`.

Kept for the modules that still import this path (``tracesim.integrations``, outside this
package's owners); import `tracesim._terminal` instead. It goes when they have moved.
"""

from __future__ import annotations

from tracesim._terminal import json_for_terminal, visible

__all__ = ["json_for_terminal", "visible"]
