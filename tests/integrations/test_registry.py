"""tracesim finds an integration by its entry point; without one, the error names the extra.

``tracesim.instrument_openai()`` and ``configure(instrument=["openai"])`` look the integration
up under the ``tracesim.integrations`` entry points (the ``tracesim-openai`` distribution, which
``pip install 'tracesim[openai]'`` brings). These pin what happens when it is not there.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any

import pytest

import tracesim
from tracesim.instrumentation import ENTRY_POINT_GROUP, MissingIntegrationError
from tracesim.integrations import _registry

NAMES = ["openai", "anthropic", "langchain"]


@pytest.fixture
def nothing_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """No distribution registers any integration, and none was found before."""
    monkeypatch.setattr(_registry, "_found", {})
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **selection: [])


@pytest.mark.parametrize("name", NAMES)
def test_an_uninstalled_integration_names_its_extra(name: str, nothing_registered: None) -> None:
    with pytest.raises(MissingIntegrationError, match=rf"pip install 'tracesim\[{name}\]'"):
        getattr(tracesim, f"instrument_{name}")()
    with pytest.raises(MissingIntegrationError, match=rf"tracesim\[{name}\]"):
        tracesim.configure(exporters=["console"], instrument=[name])
    getattr(tracesim, f"uninstrument_{name}")()  # never on: nothing to do, no error


@pytest.mark.parametrize("name", NAMES)
def test_each_name_finds_its_distributions_integration(name: str) -> None:
    package = pytest.importorskip(f"tracesim_{name}", reason=f"tracesim-{name} is not installed")
    (entry_point,) = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP, name=name)
    assert entry_point.value == f"tracesim_{name}:integration"
    assert _registry.find(name) is package.integration


def test_a_registered_integration_that_cannot_be_imported_is_missing(run_python: Any, tmp_path: Path) -> None:
    pytest.importorskip("tracesim_openai", reason="tracesim-openai is not installed")
    code = (
        "import sys\nsys.modules['tracesim_openai'] = None\n"
        "import tracesim\n"
        "try:\n    tracesim.instrument_openai()\n"
        "except ImportError as exc:\n    print(type(exc).__name__, type(exc.__cause__).__name__, exc)\n"
    )
    done = run_python(code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[:2] == ["MissingIntegrationError", "ModuleNotFoundError"]
    assert "pip install 'tracesim[openai]'" in done.stdout


def test_an_unsupported_installed_version_is_an_error_not_a_silent_no_op() -> None:
    """OpenTelemetry's instrumentors check the instrumented library's version and, on a
    conflict, only log it and instrument nothing; tracesim says so, naming what is installed."""
    from collections.abc import Collection

    from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]

    from tracesim.instrumentation import GenAIIntegration

    instrumented: list[str] = []

    class NeedsAFutureOpenAI(BaseInstrumentor):  # type: ignore[misc]
        def instrumentation_dependencies(self) -> Collection[str]:
            return ("openai >= 999",)

        def _instrument(self, **kwargs: Any) -> None:
            instrumented.append("on")

        def _uninstrument(self, **kwargs: Any) -> None:
            pass

    integration = GenAIIntegration("future", lambda: NeedsAFutureOpenAI)
    with pytest.raises(MissingIntegrationError) as raised:
        integration.instrument(capture=None)
    message = str(raised.value)
    assert "openai >= 999" in message
    assert "pip install -U 'tracesim[future]'" in message
    assert instrumented == []
    assert integration._instrumentor is None


# A third-party integration: a module and the metadata of a distribution that registers it.
THIRD_PARTY = """
import json, os
STATE = os.environ["STATE_FILE"]

class Integration:
    def instrument(self, capture):
        with open(STATE, "a") as f:
            f.write(json.dumps(["on", capture]) + "\\n")
        return True

    def uninstrument(self):
        with open(STATE, "a") as f:
            f.write(json.dumps(["off"]) + "\\n")

integration = Integration()
"""


def test_configure_turns_on_any_installed_integration_by_its_registered_name(
    run_python: Any, tmp_path: Path
) -> None:
    """An integration of one's own is a distribution registering under the entry-point group:
    ``configure(instrument=[...])`` takes its name as it takes tracesim's; an unregistered name
    stays a ConfigError naming what is accepted."""
    site = tmp_path / "site"
    (site / "mylib_tracing-1.0.dist-info").mkdir(parents=True)
    (site / "mylib_tracing.py").write_text(THIRD_PARTY, encoding="utf-8")
    (site / "mylib_tracing-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: mylib-tracing\nVersion: 1.0\n", encoding="utf-8"
    )
    (site / "mylib_tracing-1.0.dist-info" / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\nmylib = mylib_tracing:integration\n", encoding="utf-8"
    )
    state = tmp_path / "state.jsonl"
    code = (
        "import tracesim\n"
        "tracesim.configure(service_name='t', exporters='none', instrument=['mylib'])\n"
        "try:\n"
        "    tracesim.configure(service_name='t', exporters='none', instrument=['nosuchlib'])\n"
        "except tracesim.ConfigError as exc:\n"
        "    print(exc.setting, '|', exc.accepted)\n"
    )
    done = run_python(code, cwd=tmp_path, env={"PYTHONPATH": str(site), "STATE_FILE": str(state)})
    assert done.returncode == 0, done.stderr
    assert state.read_text(encoding="utf-8").splitlines() == ['["on", null]']
    setting, accepted = done.stdout.strip().split(" | ")
    assert setting == "instrument"
    assert "openai, anthropic, langchain" in accepted
    assert ENTRY_POINT_GROUP in accepted
