"""The integrations' tests share the repository's test helpers, from tests/.

Each distribution's tests (``integrations/<name>/tests/``) run from the repository root like
the core's, with the same isolation (``_isolated``: a clean environment and working directory,
tracesim's own errors raised), the same subprocess runner (``run_python``) and the scripted
model server (``tests/llm_server.py``). pytest takes ``pytest_plugins`` from the root conftest
only, so the fixtures of ``tests/conftest.py`` are loaded from its file here, under a name of
their own, and re-exported. The tests of the suppression guards share two helpers, as fixtures.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import context as otel_context
from opentelemetry.instrumentation.utils import suppress_instrumentation

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent / "tests"

# This folder holds distributions named like the libraries they integrate (openai/, langchain/):
# on sys.path, where pytest puts a conftest's folder, each would be a namespace package standing
# in for that library when it is not installed.
while str(HERE) in sys.path:
    sys.path.remove(str(HERE))
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from llm_server import LLMServer, llm_server  # noqa: E402  (tests/ is on sys.path from here)


def _shared_conftest() -> Any:
    """tracesim's ``tests/conftest.py``, loaded once under a name of its own (pytest loads it as
    ``conftest``); every distribution's tests, the pytest plugin's included, take it from here."""
    name = "tracesim_core_tests_conftest"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, TESTS / "conftest.py")
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return module


_shared = _shared_conftest()
_isolated = _shared._isolated
run_python = _shared.run_python

__all__ = ["_isolated", "llm_server", "names_when_suppressed", "run_python", "suppression"]


class _Attached:
    """A context value set by hand for the block, as code without OpenTelemetry's helper does."""

    def __init__(self, key: str) -> None:
        self._key = key

    def __enter__(self) -> None:
        self._token = otel_context.attach(otel_context.set_value(self._key, True))

    def __exit__(self, *exc_info: object) -> None:
        otel_context.detach(self._token)


# The API's own name for the key every instrumentation checks.
SUPPRESS_KEY: str = otel_context._SUPPRESS_INSTRUMENTATION_KEY

SUPPRESSIONS: dict[str, Callable[[], Any]] = {
    "suppress_instrumentation": suppress_instrumentation,
    "context_key": lambda: _Attached(SUPPRESS_KEY),
}


@pytest.fixture(params=sorted(SUPPRESSIONS))
def suppression(request: pytest.FixtureRequest) -> Callable[[], Any]:
    """Each way code marks a block as not to be traced: OpenTelemetry's helper, or the key by hand."""
    return SUPPRESSIONS[request.param]


def _names_when_suppressed(
    server: LLMServer, suppression: Callable[[], Any], call: Callable[[str], str]
) -> list[str]:
    """Span names after one call under ``suppression`` and one after it; the model answered both."""
    from tracesim.testing import capture_spans

    with capture_spans() as captured:
        with suppression():
            assert call("suppressed?") == "Warsaw."
        assert call("traced?") == "Warsaw."
        names = [s.name for s in captured.spans]
    assert server.count() == 2  # both calls reached the model: only the first went untraced
    return names


@pytest.fixture
def names_when_suppressed() -> Callable[[LLMServer, Callable[[], Any], Callable[[str], str]], list[str]]:
    """``(server, suppression, call) -> span names``: one call suppressed, one not, both answered."""
    return _names_when_suppressed
