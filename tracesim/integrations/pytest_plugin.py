"""Deprecated path of tracesim's pytest plugin: it is `tracesim_pytest.plugin` now.

The plugin moved to its own distribution, ``tracesim-pytest`` (``pip install
'tracesim[pytest]'``). pytest finds it by its entry point, whose name is still
``tracesim.integrations.pytest_plugin`` (so ``-p no:tracesim.integrations.pytest_plugin``
turns it off as before) and which never imports this module. This module is kept for one
release for code that imports ``assert_passes`` or ``TracesimEval`` from here: it warns
(`DeprecationWarning`) and forwards; without the distribution it raises an `ImportError`
that says what to install.
"""

from __future__ import annotations

import warnings

try:
    from tracesim_pytest.plugin import TracesimEval, assert_passes
except ModuleNotFoundError as exc:
    if not (exc.name or "").startswith("tracesim_pytest"):
        raise
    raise ImportError(
        "tracesim.integrations.pytest_plugin moved to the tracesim-pytest distribution: "
        "pip install 'tracesim[pytest]', then import tracesim_pytest.plugin"
    ) from exc

warnings.warn(
    "tracesim.integrations.pytest_plugin is deprecated and goes in the next release: "
    "import tracesim_pytest.plugin (from tracesim_pytest import assert_passes, TracesimEval)",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = ["TracesimEval", "assert_passes"]
