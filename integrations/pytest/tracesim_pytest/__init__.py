"""tracesim-pytest: tracesim's pytest plugin, and AgentTest's ``@agent_test`` on pytest.

pytest loads the plugin by itself once the distribution is installed (``pip install
'tracesim[pytest]'``): the ``tracesim_eval`` fixture and the ``@pytest.mark.tracesim`` marker
score a test's agent calls with tracesim's evaluators, and every result is reported (a table,
``--tracesim-json``, JUnit properties, the GitHub step summary); see `tracesim_pytest.plugin`.
``@agent_test`` runs an AgentTest suite under pytest; see `tracesim_pytest.agenttest`.

Example:
    >>> from tracesim_pytest import agent_test
    >>> @agent_test(criteria=["similarity"])
    ... def test_capital():
    ...     return {"actual": "Paris", "expected": "Paris", "similarity_config": {"method": "exact"}}
    >>> test_capital()  # passes: exact match
"""

from tracesim_pytest._version import __version__
from tracesim_pytest.agenttest import AgentTestSpec, agent_test
from tracesim_pytest.plugin import TracesimEval, assert_passes

__all__ = ["AgentTestSpec", "TracesimEval", "__version__", "agent_test", "assert_passes"]
