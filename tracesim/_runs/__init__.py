"""Runs built from spans: what happened under a scored span, as a `tracesim.runs.Run`.

`build_run` reads the subtree under a span in every convention tracesim knows (its own,
OpenTelemetry GenAI, OpenInference, OpenLLMetry, pydantic-ai's), so an agent traced by any of
them can be scored by its tool calls, trajectory and budget.
"""

from __future__ import annotations

from tracesim._runs._build import DEFAULT_MAX_STEPS, build_run
from tracesim._runs._records import RunIndex, readable_span, record_run

__all__ = ["DEFAULT_MAX_STEPS", "RunIndex", "build_run", "readable_span", "record_run"]
