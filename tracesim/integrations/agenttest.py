"""Deprecated path of AgentTest's ``@agent_test``: it is `tracesim_pytest.agenttest` now.

``@agent_test`` moved with the pytest plugin to its own distribution, ``tracesim-pytest``
(``pip install 'tracesim[pytest]'``); a suite moved from AgentTest imports
``from tracesim_pytest import agent_test``. This module is kept for one release: what is
taken from here warns (`DeprecationWarning`) and forwards; without the distribution,
importing it raises an `ImportError` that says what to install.
"""

from __future__ import annotations

import warnings
from typing import Any

try:
    from tracesim_pytest import agenttest as _agenttest
except ModuleNotFoundError as exc:
    if not (exc.name or "").startswith("tracesim_pytest"):
        raise
    raise ImportError(
        "tracesim.integrations.agenttest moved to the tracesim-pytest distribution: "
        "pip install 'tracesim[pytest]', then from tracesim_pytest import agent_test"
    ) from exc

_DEPRECATED = ("SPEC_ATTRIBUTE", "AgentTestSpec", "agent_test")  # what old code imported from here


def __getattr__(name: str) -> Any:
    if name in _DEPRECATED:
        warnings.warn(
            "tracesim.integrations.agenttest is deprecated and goes in the next release: "
            "from tracesim_pytest import agent_test",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(_agenttest, name)
    raise AttributeError(f"module 'tracesim.integrations.agenttest' has no attribute {name!r}")
