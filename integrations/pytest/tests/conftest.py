"""The fixtures of tracesim's own tests, for this distribution's tests (run from the checkout).

Every test starts unconfigured, in its own directory, with a clean environment (``_isolated``),
as tracesim's tests do; the scripted model server (``llm_server``) and the shared helper
modules (``hostile``, ``secret_kinds``) are tracesim's too. They are taken from the
checkout's ``tests/`` folder rather than copied: one definition of what a clean test is.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

CORE_TESTS = Path(__file__).resolve().parents[3] / "tests"
if str(CORE_TESTS) not in sys.path:
    sys.path.insert(0, str(CORE_TESTS))  # hostile, secret_kinds, llm_server


def _core_conftest() -> object:
    """tracesim's ``tests/conftest.py``, loaded under a name of its own (pytest loads it as ``conftest``)."""
    name = "tracesim_core_tests_conftest"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, CORE_TESTS / "conftest.py")
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return module


_core = _core_conftest()
_isolated = _core._isolated  # type: ignore[attr-defined]  # autouse
run_python = _core.run_python  # type: ignore[attr-defined]
llm_server = _core.llm_server  # type: ignore[attr-defined]
