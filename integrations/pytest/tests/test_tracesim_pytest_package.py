"""The tracesim-pytest distribution: its version, its imports, its entry point and the old paths.

- Released with tracesim: the same version, and a dependency on exactly that tracesim.
- It imports only tracesim's public API (no ``tracesim._*`` module), the part written for
  plugins being `tracesim.plugin_support`, whose names are pinned here.
- pytest loads it once, by the ``pytest11`` entry point that keeps the name the plugin had
  inside tracesim, so ``-p no:tracesim.integrations.pytest_plugin`` still turns it off.
- The old import paths (``tracesim.integrations.pytest_plugin``, ``tracesim.integrations.agenttest``)
  forward for one release: a name taken from them warns (`DeprecationWarning`), and without the
  distribution importing them says what to install.
"""

from __future__ import annotations

import ast
import doctest
import importlib
import re
import sys
from importlib.metadata import distribution, entry_points
from pathlib import Path

import pytest
import tracesim_pytest
import tracesim_pytest.agenttest
import tracesim_pytest.plugin

import tracesim
import tracesim.plugin_support

pytest_plugins = ["pytester"]

DISTRIBUTION = Path(__file__).resolve().parents[1]
PACKAGE = DISTRIBUTION / "tracesim_pytest"
ENTRY_POINT = "tracesim.integrations.pytest_plugin"


def test_the_version_is_tracesims() -> None:
    pyproject = (DISTRIBUTION / "pyproject.toml").read_text(encoding="utf-8")  # tomllib: Python 3.11+
    assert re.findall(r'^version = "(.+)"$', pyproject, re.MULTILINE) == [tracesim.__version__]
    assert tracesim_pytest.__version__ == tracesim.__version__
    assert re.findall(r'"tracesim==([^"]+)"', pyproject) == [tracesim.__version__]
    assert distribution("tracesim-pytest").version == tracesim.__version__  # as installed


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def test_only_tracesims_public_api_is_imported() -> None:
    private = [
        f"{path.relative_to(DISTRIBUTION)}:{line}: {name}"
        for path in sorted([*PACKAGE.rglob("*.py"), *(DISTRIBUTION / "examples").rglob("*.py")])
        for line, name in _imported_modules(path)
        if name.split(".")[0] == "tracesim" and any(part.startswith("_") for part in name.split(".")[1:])
    ]
    assert private == [], "tracesim-pytest imports private tracesim modules:\n" + "\n".join(private)


def test_the_plugin_support_api_is_pinned_documented_and_its_examples_run() -> None:
    module = tracesim.plugin_support
    assert sorted(module.__all__) == sorted(
        [
            "ERROR_TYPE",
            "EVALUATION_DETAILS",
            "EVALUATION_DURATION",
            "EVALUATION_EVENT",
            "EVALUATION_EXPLANATION",
            "EVALUATION_NAME",
            "EVALUATION_PASSED",
            "EVALUATION_SCORE_LABEL",
            "EVALUATION_SCORE_VALUE",
            "EVALUATION_STATUS",
            "EVALUATION_THRESHOLD",
            "EXPECTED_TOOL_CALLS",
            "SPAN_KIND",
            "InputError",
            "build_evaluators",
            "open_text",
            "read_yaml",
            "redact_data",
            "redact_text",
            "redaction",
            "to_jsonable",
            "visible",
            "write_json",
        ]
    )
    for name in module.__all__:
        value = getattr(module, name)
        if callable(value):
            assert value.__doc__, f"tracesim.plugin_support.{name} has no docstring"
    outcome = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert outcome.attempted > 0
    assert outcome.failed == 0


def test_the_package_examples_run() -> None:
    outcome = doctest.testmod(tracesim_pytest, optionflags=doctest.ELLIPSIS)
    assert outcome.attempted > 0
    assert outcome.failed == 0


def test_the_entry_point_keeps_its_name_and_names_the_new_module() -> None:
    ours = [ep for ep in entry_points(group="pytest11") if ep.value.startswith("tracesim_pytest")]
    assert [(ep.name, ep.value) for ep in ours] == [(ENTRY_POINT, "tracesim_pytest.plugin")]


LOADED = """
import sys

def test_loaded_once(request):
    plugins = request.config.pluginmanager.list_name_plugin()
    ours = [name for name, plugin in plugins if getattr(plugin, "__name__", "") == "tracesim_pytest.plugin"]
    assert ours == ["tracesim.integrations.pytest_plugin"]
    assert "tracesim.integrations.pytest_plugin" not in sys.modules  # the deprecated path is not imported
    assert request.config.getoption("tracesim_json") is None  # its option is there
"""

_CORE_DECLARES_IT = any(
    ep.name == ENTRY_POINT and ep.value == ENTRY_POINT for ep in entry_points(group="pytest11")
)


@pytest.mark.skipif(
    _CORE_DECLARES_IT,
    reason="tracesim's own installed metadata still declares the old pytest11 entry point "
    "(pyproject.toml drops it; reinstall tracesim)",
)
def test_pytest_loads_it_once_by_the_entry_point_and_the_old_name_turns_it_off(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_loaded=LOADED)
    loaded = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:langsmith_plugin")
    loaded.assert_outcomes(passed=1)
    off = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:langsmith_plugin", "-p", f"no:{ENTRY_POINT}"
    )
    off.assert_outcomes(failed=1)  # no plugin: not loaded, no option


@pytest.mark.parametrize(
    ("old", "new", "names"),
    [
        ("tracesim.integrations.pytest_plugin", tracesim_pytest.plugin, ["TracesimEval", "assert_passes"]),
        ("tracesim.integrations.agenttest", tracesim_pytest.agenttest, ["AgentTestSpec", "agent_test"]),
    ],
)
def test_an_old_path_warns_and_forwards(old: str, new: object, names: list[str]) -> None:
    module = importlib.import_module(old)
    for name in names:
        with pytest.warns(DeprecationWarning, match=r"deprecated .* tracesim_pytest"):
            assert getattr(module, name) is getattr(new, name)
    with pytest.warns(DeprecationWarning, match=r"deprecated .* tracesim_pytest"):
        exec(f"from {old} import {names[0]}", {})  # what old code does


@pytest.mark.parametrize("old", ["tracesim.integrations.pytest_plugin", "tracesim.integrations.agenttest"])
def test_an_old_path_without_the_distribution_says_what_to_install(
    old: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(sys.modules, old, raising=False)
    for name in ("tracesim_pytest", "tracesim_pytest.plugin", "tracesim_pytest.agenttest"):
        monkeypatch.setitem(sys.modules, name, None)  # as if it were not installed
    with pytest.raises(ImportError, match=r"pip install 'tracesim\[pytest\]'"):
        importlib.import_module(old)
