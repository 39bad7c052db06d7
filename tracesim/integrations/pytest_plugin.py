"""Deprecated path of tracesim's pytest plugin: it is `tracesim_pytest.plugin` now.

The plugin moved to its own distribution, ``tracesim-pytest`` (``pip install
'tracesim[pytest]'``). pytest finds it by its entry point, whose name is still
``tracesim.integrations.pytest_plugin`` (so ``-p no:tracesim.integrations.pytest_plugin``
turns it off as before). This module is kept for one release: ``assert_passes`` and
``TracesimEval`` taken from here warn (`DeprecationWarning`) and forward; without the
distribution, importing it raises an `ImportError` that says what to install.

It also carries the plugin's hooks and fixture, without a warning, for a tracesim installed
before the move, whose own metadata still names this module as the ``pytest11`` entry point:
pytest then loads the plugin through it, once, under the same name.
"""

from __future__ import annotations

import warnings
from typing import Any

try:
    from tracesim_pytest import plugin as _plugin
    from tracesim_pytest.plugin import (
        pytest_addoption,
        pytest_collection_modifyitems,
        pytest_configure,
        pytest_runtest_call,
        pytest_runtest_makereport,
        pytest_unconfigure,
        tracesim_eval,
    )
except ModuleNotFoundError as exc:
    if not (exc.name or "").startswith("tracesim_pytest"):
        raise
    raise ImportError(
        "tracesim.integrations.pytest_plugin moved to the tracesim-pytest distribution: "
        "pip install 'tracesim[pytest]', then import tracesim_pytest.plugin"
    ) from exc

_DEPRECATED = ("TracesimEval", "assert_passes")  # what old code imported from here

_HOOKS = (
    pytest_addoption,
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_runtest_call,
    pytest_runtest_makereport,
    pytest_unconfigure,
    tracesim_eval,
)


def __getattr__(name: str) -> Any:
    if name in _DEPRECATED:
        warnings.warn(
            "tracesim.integrations.pytest_plugin is deprecated and goes in the next release: "
            "import tracesim_pytest.plugin (from tracesim_pytest import assert_passes, TracesimEval)",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(_plugin, name)
    raise AttributeError(f"module 'tracesim.integrations.pytest_plugin' has no attribute {name!r}")
