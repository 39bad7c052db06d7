"""The integrations (integrations/<name>/) stand on tracesim's public API alone, at tracesim's version.

Each is its own distribution: a private tracesim module it imported could change under it in
any release. So its package and example import only public modules (no ``tracesim._x``, no
``tracesim.x._y``, no ``_name`` from a tracesim module); what they need is in
`tracesim.instrumentation`. They are released with tracesim at its version, which the core's
extras pin (``tracesim[openai]`` is ``tracesim-openai==<version>``), and they register under
the ``tracesim.integrations`` entry points, where ``tracesim.instrument_openai()`` finds them.
"""

from __future__ import annotations

import ast
import doctest
import importlib
from importlib.metadata import entry_points
from pathlib import Path

import pytest

import tracesim
from tracesim.instrumentation import ENTRY_POINT_GROUP, Integration, MissingIntegrationError

tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11's tomllib")

REPO = Path(__file__).resolve().parents[1]
INTEGRATIONS = REPO / "integrations"
DISTRIBUTIONS = sorted(path.parent for path in INTEGRATIONS.glob("*/pyproject.toml"))
# The integrations configure(instrument=[...]) turns on: each is the extra of the same name.
INSTRUMENTED = ["anthropic", "langchain", "litellm", "mcp", "openai", "openai_agents", "pydantic_ai"]
# pydantic-ai needs Python 3.11 or later, and so does its integration (its extra says so)
MARKERS = {"pydantic_ai": "; python_version >= '3.11'"}


def distribution_name(name: str) -> str:
    """``tracesim-<name>`` as a distribution is written: ``pydantic_ai`` -> ``tracesim-pydantic-ai``."""
    return f"tracesim-{name.replace('_', '-')}"


def _shipped_files(distribution: Path) -> list[Path]:
    """The Python files a distribution ships or shows: its packages and its example(s)."""
    files = list(distribution.glob("*.py"))
    for package in distribution.glob("*/__init__.py"):
        files.extend(package.parent.rglob("*.py"))
    return sorted(files)


def private_imports(source: str, filename: str) -> list[str]:
    """``file:line: what`` for every import of a private tracesim module or name in ``source``."""

    def private(module: str) -> bool:
        parts = module.split(".")
        return parts[0] == "tracesim" and any(part.startswith("_") for part in parts[1:])

    found = []
    for node in ast.walk(ast.parse(source, filename)):
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [f"{node.module}.{alias.name}" for alias in node.names if alias.name != "__version__"]
        found.extend(f"{filename}:{node.lineno}: {module}" for module in modules if private(module))
    return found


def test_the_scan_names_file_line_and_module() -> None:
    source = (
        "import tracesim\n"
        "from tracesim import _runtime, trace, __version__\n"
        "import tracesim.integrations._registry as registry\n"
        "from tracesim._capture import capture_value\n"
        "from tracesim.instrumentation import GenAIIntegration, _Content\n"
        "from .private import helper\n"
        "import _thread\n"
    )
    assert private_imports(source, "pkg/x.py") == [
        "pkg/x.py:2: tracesim._runtime",
        "pkg/x.py:3: tracesim.integrations._registry",
        "pkg/x.py:4: tracesim._capture.capture_value",
        "pkg/x.py:5: tracesim.instrumentation._Content",
    ]


def test_there_are_the_integrations_configure_can_turn_on() -> None:
    names = {path.name for path in DISTRIBUTIONS}
    assert set(INSTRUMENTED) <= names


@pytest.mark.parametrize("distribution", DISTRIBUTIONS, ids=lambda path: path.name)
def test_an_integration_imports_only_tracesims_public_api(distribution: Path) -> None:
    files = _shipped_files(distribution)
    assert files, f"{distribution} ships no Python file"
    found = [
        hit
        for path in files
        for hit in private_imports(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    ]
    assert found == [], "private tracesim imports (use tracesim.instrumentation):\n" + "\n".join(found)


@pytest.mark.parametrize("distribution", DISTRIBUTIONS, ids=lambda path: path.name)
def test_an_integration_is_at_tracesims_version_and_needs_exactly_it(distribution: Path) -> None:
    project = tomllib.loads((distribution / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == distribution_name(distribution.name)
    assert project["version"] == tracesim.__version__
    assert f"tracesim=={tracesim.__version__}" in project["dependencies"]


@pytest.mark.parametrize("name", INSTRUMENTED)
def test_the_extra_is_the_integration_at_tracesims_version(name: str) -> None:
    core = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pin = f"{distribution_name(name)}=={tracesim.__version__}{MARKERS.get(name, '')}"
    assert core["optional-dependencies"][name] == [pin]


@pytest.mark.parametrize("name", INSTRUMENTED)
def test_the_integration_registers_its_entry_point(name: str) -> None:
    project = tomllib.loads((INTEGRATIONS / name / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    package = f"tracesim_{name}"
    assert project["entry-points"][ENTRY_POINT_GROUP] == {name: f"{package}:integration"}
    (registered,) = entry_points(group=ENTRY_POINT_GROUP, name=name)
    assert isinstance(registered.load(), Integration)
    assert importlib.import_module(package).__file__ == str(INTEGRATIONS / name / package / "__init__.py")


def test_an_unregistered_integration_names_its_extra() -> None:
    from tracesim.integrations._registry import find

    with pytest.raises(MissingIntegrationError, match=r"pip install 'tracesim\[nothing\]'"):
        find("nothing")


@pytest.mark.parametrize("module", ["tracesim.instrumentation", "tracesim.integrations._registry"])
def test_the_docstring_examples_run(module: str) -> None:
    outcome = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert outcome.attempted > 0, f"{module} has no example"
    assert outcome.failed == 0
