"""Evaluator tests: offline NLTK data from ../shared/nltk_data and a hypothesis profile."""

from __future__ import annotations

import os
from pathlib import Path

# Before anything imports nltk (its search path is read once, at import).
SHARED_NLTK_DATA = (Path(__file__).parents[2] / "../shared/nltk_data").resolve()
if "NLTK_DATA" not in os.environ and SHARED_NLTK_DATA.is_dir():
    os.environ["NLTK_DATA"] = str(SHARED_NLTK_DATA)

from hypothesis import HealthCheck, settings  # noqa: E402

# The machine is small and shared: few examples, no per-example deadline.
settings.register_profile(
    "tracesim-evaluators",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
# HYPOTHESIS_PROFILE=tracesim-evaluators-thorough for a long local run.
settings.register_profile(
    "tracesim-evaluators-thorough", parent=settings.get_profile("tracesim-evaluators"), max_examples=2000
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "tracesim-evaluators"))
