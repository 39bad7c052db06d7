"""Deprecated path of AgentTest's ``@agent_test``: it is `tracesim_pytest.agenttest` now.

``@agent_test`` moved with the pytest plugin to its own distribution, ``tracesim-pytest``
(``pip install 'tracesim[pytest]'``); a suite moved from AgentTest imports
``from tracesim_pytest import agent_test``. This module is kept for one release: it warns
(`DeprecationWarning`) and forwards; without the distribution it raises an `ImportError` that
says what to install.
"""

from __future__ import annotations

import warnings

try:
    from tracesim_pytest.agenttest import SPEC_ATTRIBUTE, AgentTestSpec, agent_test
except ModuleNotFoundError as exc:
    if not (exc.name or "").startswith("tracesim_pytest"):
        raise
    raise ImportError(
        "tracesim.integrations.agenttest moved to the tracesim-pytest distribution: "
        "pip install 'tracesim[pytest]', then from tracesim_pytest import agent_test"
    ) from exc

warnings.warn(
    "tracesim.integrations.agenttest is deprecated and goes in the next release: "
    "from tracesim_pytest import agent_test",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = ["SPEC_ATTRIBUTE", "AgentTestSpec", "agent_test"]
