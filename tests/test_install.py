"""tracesim and its integrations install the way a user installs them: wheels, a fresh venv, pip.

The integrations are distributions of their own (``integrations/<name>/``), found by the core
through entry points, and the core's extras name them (``tracesim[openai]`` is
``tracesim-openai==<version>``). Editable installs from the checkout (what ``make test`` does)
cannot show that this holds for a user, so this module does what a user's machine does, once
per session:

- builds the wheels of the core and of the eight integrations (``pip wheel``);
- makes a fresh venv (``python -m venv``, no system site-packages, the pip it ships) and runs
  ``pip install --find-links <wheels> 'tracesim[openai]'``, then ``'tracesim[pytest]'``: nothing
  named tracesim* is on the package index, so the wheels must carry everything, and pip takes
  the rest (the pinned instrumentations, pytest) from the registry or its cache.

Then it checks, in that venv: ``instrument_openai()`` and ``configure(instrument=["openai"])``
trace a real openai call (to a loopback server); ``instrument_anthropic()`` without its
integration raises `MissingIntegrationError` naming ``pip install 'tracesim[anthropic]'``; the
pytest plugin is loaded once, by its entry point, its ``tracesim_eval`` fixture works, and
``-p no:tracesim.integrations.pytest_plugin`` turns it off. And, in the wheels: names, versions
(tracesim's), ``Requires-Dist`` (exact pins on the instrumentation betas), entry points, and
that an integration's wheel holds its package alone (no tests, no copy of tracesim).

One venv holds core, openai and pytest: the other integrations (anthropic, langchain and the
agent frameworks') are checked in their wheels only (their installs would add the anthropic
client, langchain-core, the frameworks, which the editable test environment covers).
"""

from __future__ import annotations

import email.parser
import email.policy
import fcntl
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Sequence
from configparser import ConfigParser
from dataclasses import dataclass
from email.message import Message
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import tracesim

# A cold pip cache downloads the core's dependencies (numpy, grpcio, ...) in the first test.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[1]
VERSION = tracesim.__version__
INTEGRATIONS = (
    *("openai", "anthropic", "langchain", "pytest"),
    *("pydantic_ai", "openai_agents", "litellm", "mcp"),  # the agent frameworks
)


def distribution(name: str) -> str:
    """The distribution of an integration, as its metadata names it: ``tracesim-pydantic-ai``."""
    return f"tracesim-{canonicalize_name(name)}"


# pydantic-ai needs Python 3.11, and so does its integration; the others, what tracesim needs
REQUIRES_PYTHON = {"tracesim-pydantic-ai": ">=3.11"}
# Entry points each distribution registers: (group, name) -> object.
ENTRY_POINTS: dict[str, dict[tuple[str, str], str]] = {
    "tracesim": {("console_scripts", "tracesim"): "tracesim.cli:main"},
    "tracesim-openai": {("tracesim.integrations", "openai"): "tracesim_openai:integration"},
    "tracesim-anthropic": {("tracesim.integrations", "anthropic"): "tracesim_anthropic:integration"},
    "tracesim-langchain": {("tracesim.integrations", "langchain"): "tracesim_langchain:integration"},
    "tracesim-pytest": {("pytest11", "tracesim.integrations.pytest_plugin"): "tracesim_pytest.plugin"},
    "tracesim-pydantic-ai": {("tracesim.integrations", "pydantic_ai"): "tracesim_pydantic_ai:integration"},
    "tracesim-openai-agents": {
        ("tracesim.integrations", "openai_agents"): "tracesim_openai_agents:integration"
    },
    "tracesim-litellm": {("tracesim.integrations", "litellm"): "tracesim_litellm:integration"},
    "tracesim-mcp": {("tracesim.integrations", "mcp"): "tracesim_mcp:integration"},
}
# What each integration instruments, besides tracesim and the instrumentation betas.
INSTRUMENTED = {
    "tracesim-openai": "openai",
    "tracesim-anthropic": "anthropic",
    "tracesim-langchain": "langchain-core",
    "tracesim-pydantic-ai": "pydantic-ai-slim",
    "tracesim-openai-agents": "openai-agents",
    "tracesim-litellm": "litellm",
    "tracesim-mcp": "mcp",
}
# The OpenTelemetry betas an integration builds on, which change between minor releases: pinned
# exactly (the others, the stable instrumentation base, in a range).
BETAS = ("opentelemetry-util-genai", "opentelemetry-instrumentation-genai-")
PIP_TIMEOUT = 600


@dataclass(frozen=True)
class Wheel:
    """One built wheel: its file, its METADATA, its entry points and the names inside it."""

    path: Path
    metadata: Message
    entry_points: dict[tuple[str, str], str]
    names: list[str]

    @property
    def requirements(self) -> list[Requirement]:
        return [Requirement(line) for line in self.metadata.get_all("Requires-Dist") or []]


@dataclass(frozen=True)
class Installed:
    """The fresh venv after the user's installs, and what pip said it holds after each."""

    python: Path
    wheels: dict[str, Wheel]
    after_openai: dict[str, str]
    after_pytest: dict[str, str]


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment a user's shell would give: no venv, path or test-run settings of ours."""
    dropped = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTEST_", "TRACESIM_", "OTEL_", "COV_")
    env = {key: value for key, value in os.environ.items() if not key.startswith(dropped)}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"  # the loopback server, whatever proxy
    env.update(extra)
    return env


def _run(command: Sequence[str | Path], *, cwd: Path, timeout: float = PIP_TIMEOUT) -> str:
    """Run a command; its output, or a failure that shows it."""
    done = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"{' '.join(map(str, command))} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def _read_wheel(path: Path) -> Wheel:
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        info = next(name.split("/")[0] for name in names if name.endswith(".dist-info/METADATA"))
        metadata = email.parser.BytesParser(policy=email.policy.compat32).parsebytes(
            archive.read(f"{info}/METADATA")
        )
        points: dict[tuple[str, str], str] = {}
        if f"{info}/entry_points.txt" in names:
            parser = ConfigParser(delimiters=("=",))
            parser.optionxform = str  # type: ignore[assignment,method-assign]  # names keep their case
            parser.read_string(archive.read(f"{info}/entry_points.txt").decode("utf-8"))
            for group in parser.sections():
                points.update({(group, name): value for name, value in parser.items(group)})
    return Wheel(path, metadata, points, names)


def _pip_list(python: Path, cwd: Path) -> dict[str, str]:
    listed = json.loads(_run([python, "-m", "pip", "list", "--format", "json"], cwd=cwd))
    return {canonicalize_name(item["name"]): item["version"] for item in listed}


def _build_and_install(root: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Build every wheel into ``root/wheels``; a fresh ``root/venv`` with the user's installs."""
    dist = root / "wheels"
    # One pip run builds them all (each in its own isolated build environment, as a user's
    # `pip wheel` or `python -m build` would); the core compiles its optional C probe.
    sources = [REPO, *(REPO / "integrations" / name for name in INTEGRATIONS)]
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", dist, *sources], cwd=root)
    # The base interpreter's venv module, whichever venv runs the tests (never --system-site-packages).
    _run([sys.executable, "-m", "venv", root / "venv"], cwd=root)
    python = root / "venv" / "bin" / "python"
    install: list[str | Path] = [python, "-m", "pip", "install", "-q", "--find-links", dist]
    _run([*install, "tracesim[openai]"], cwd=root)
    after_openai = _pip_list(python, root)
    _run([*install, "tracesim[pytest]"], cwd=root)
    return after_openai, _pip_list(python, root)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """Wheels of the core and the integrations, and a fresh venv with tracesim[openai] and [pytest].

    Made once per run: under pytest-xdist the workers share one temporary root, and a lock
    makes the first worker build while the others wait and then read what it built.
    """
    if importlib.util.find_spec("venv") is None or importlib.util.find_spec("ensurepip") is None:
        pytest.skip("this Python has no venv/ensurepip module to make a fresh environment with")
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the run's root, above each worker's own
    root = shared / "tracesim-install"
    done = root / "installed.json"
    with open(shared / "tracesim-install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, a failed build included
        if not done.exists():
            shutil.rmtree(root, ignore_errors=True)  # a previous worker's failed attempt
            root.mkdir()
            done.write_text(json.dumps(_build_and_install(root)), encoding="utf-8")
    after_openai, after_pytest = json.loads(done.read_text(encoding="utf-8"))
    built = [_read_wheel(path) for path in sorted((root / "wheels").iterdir())]
    wheels = {str(canonicalize_name(wheel.metadata["Name"])): wheel for wheel in built}
    return Installed(root / "venv" / "bin" / "python", wheels, after_openai, after_pytest)


def test_the_wheels_are_built_at_tracesims_version(installed: Installed) -> None:
    assert sorted(installed.wheels) == sorted(["tracesim", *(distribution(name) for name in INTEGRATIONS)])
    core = installed.wheels["tracesim"].metadata
    for name, wheel in installed.wheels.items():
        assert wheel.metadata["Version"] == VERSION, name
        assert wheel.metadata["Requires-Python"] == REQUIRES_PYTHON.get(name, core["Requires-Python"]), name
        assert wheel.metadata["License-Expression"] == core["License-Expression"], name
        assert wheel.metadata["Description-Content-Type"] == "text/markdown", name
        assert str(wheel.metadata.get_payload()).startswith(f"# {name}\n"), (
            f"{name}: its README is not its description"
        )
        assert "Typing :: Typed" in (wheel.metadata.get_all("Classifier") or []), name


def test_each_wheel_registers_its_entry_points_and_nothing_else(installed: Installed) -> None:
    # The core registers no pytest11 entry point of its own: pytest loads the plugin once.
    assert {name: wheel.entry_points for name, wheel in installed.wheels.items()} == ENTRY_POINTS


def test_the_core_extras_name_each_integration_at_tracesims_version(installed: Installed) -> None:
    core = installed.wheels["tracesim"]
    for name in INTEGRATIONS:
        extra = canonicalize_name(name)  # pip writes tracesim[pydantic_ai] as pydantic-ai
        in_extra = [req for req in core.requirements if req.marker and req.marker.evaluate({"extra": extra})]
        host = [("pytest", ">=8")] if name == "pytest" else []  # the plugin's host
        expected = [(distribution(name), f"=={VERSION}"), *host]
        found = [(str(canonicalize_name(r.name)), str(r.specifier)) for r in in_extra]
        assert sorted(found) == sorted(expected), name
    # For one release the core requires the pytest plugin itself (its old paths keep working).
    always = {
        str(canonicalize_name(req.name)): str(req.specifier) for req in core.requirements if not req.marker
    }
    assert always["tracesim-pytest"] == f"=={VERSION}"
    assert "pytest" not in always


def test_each_integration_requires_its_tracesim_and_pins_its_instrumentation_exactly(
    installed: Installed,
) -> None:
    genai_pins: set[str] = set()
    for name in INSTRUMENTED:
        requirements = {
            str(canonicalize_name(req.name)): req
            for req in installed.wheels[name].requirements
            if not req.marker
        }
        assert str(requirements.pop("tracesim").specifier) == f"=={VERSION}", name
        instrumented = requirements.pop(INSTRUMENTED[name])
        assert instrumented.specifier, f"{name}: {instrumented.name} has no version range"
        for other, requirement in requirements.items():
            if other.startswith("tracesim-"):  # another integration it turns on (openai, for agents)
                assert str(requirement.specifier) == f"=={VERSION}", name
                continue
            assert other.startswith("opentelemetry-"), f"{name} requires {requirement}"
            operators = [specifier.operator for specifier in requirement.specifier]
            if other.startswith(BETAS):
                assert operators == ["=="], f"{name}: {requirement} is a beta and must be pinned exactly"
            else:
                assert operators, f"{name}: {requirement} has no version range"
            if other == "opentelemetry-util-genai":
                genai_pins.add(str(requirement.specifier))
    assert len(genai_pins) == 1, f"the integrations must share one opentelemetry-util-genai: {genai_pins}"
    # The pytest plugin requires its tracesim alone: pytest, its host, comes with tracesim[pytest].
    plugin = installed.wheels["tracesim-pytest"].requirements
    assert [str(req) for req in plugin if not req.marker] == [f"tracesim=={VERSION}"]


def test_an_integration_wheel_holds_its_package_alone(installed: Installed) -> None:
    for name in INTEGRATIONS:
        wheel = installed.wheels[distribution(name)]
        package = f"tracesim_{name}/"
        tops = {entry.split("/")[0] for entry in wheel.names}
        assert tops == {package.rstrip("/"), f"tracesim_{name}-{VERSION}.dist-info"}, name  # no tracesim/
        assert f"{package}py.typed" in wheel.names, name
        tests = [
            entry
            for entry in wheel.names
            if "/tests/" in entry or Path(entry).name.startswith(("test_", "conftest"))
        ]
        assert tests == [], name
    core_tops = {entry.split("/")[0] for entry in installed.wheels["tracesim"].names}
    assert core_tops == {"tracesim", f"tracesim-{VERSION}.dist-info"}


def test_each_extra_pulls_its_integration_and_its_pinned_instrumentation(installed: Installed) -> None:
    openai = installed.wheels["tracesim-openai"].requirements
    for listed in (installed.after_openai, installed.after_pytest):
        assert listed["tracesim"] == listed["tracesim-openai"] == VERSION
        for requirement in openai:  # the pinned betas at their pins, the openai client in its range
            assert requirement.specifier.contains(
                listed[canonicalize_name(requirement.name)], prereleases=True
            )
        assert "tracesim-anthropic" not in listed
        assert "tracesim-langchain" not in listed
    # tracesim brings its pytest plugin for one release, without pytest; the extra brings pytest.
    assert installed.after_openai["tracesim-pytest"] == installed.after_pytest["tracesim-pytest"] == VERSION
    assert "pytest" not in installed.after_openai
    assert "pytest" in installed.after_pytest


# Run by the venv's python, in an empty directory: what a user's script sees.
USER_SCRIPT = textwrap.dedent(
    """
    import json, sys, threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import openai
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import tracesim
    from tracesim.instrumentation import MissingIntegrationError

    REPLY = {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "Warsaw."}}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9},
    }

    class Model(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            body = json.dumps(REPLY).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Model)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{server.server_port}/v1", api_key="k", max_retries=0)

    def call():
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Curie?"}])

    def spans(exporter):
        return [(span.name, span.attributes.get("gen_ai.request.model"))
                for span in exporter.get_finished_spans()]

    found = {"tracesim": tracesim.__file__, "version": tracesim.__version__}
    found["instrument_openai"] = [tracesim.instrument_openai(), tracesim.instrument_openai()]
    exporter = InMemorySpanExporter()
    tracesim.configure(service_name="user", exporters=[exporter], batch_export=False)
    call()
    found["spans_after_instrument"] = spans(exporter)
    tracesim.uninstrument_openai()

    exporter = InMemorySpanExporter()
    tracesim.configure(service_name="user", exporters=[exporter], batch_export=False, instrument=["openai"])
    call()
    found["spans_after_configure"] = spans(exporter)
    found["instrument_after_configure"] = tracesim.instrument_openai()  # on already
    for name, turn_on in [
        ("instrument_anthropic", tracesim.instrument_anthropic),
        ("configure_anthropic", lambda: tracesim.configure(service_name="user", instrument=["anthropic"])),
    ]:
        try:
            turn_on()
            found[name] = None
        except MissingIntegrationError as error:
            found[name] = [str(error), isinstance(error, ImportError)]
    tracesim.shutdown()
    server.shutdown()
    print(json.dumps(found))
    """
)


@pytest.fixture(scope="module")
def user_script(installed: Installed, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """What `USER_SCRIPT` found, run once in the venv."""
    folder = tmp_path_factory.mktemp("user")
    return dict(
        json.loads(_run([installed.python, "-c", USER_SCRIPT], cwd=folder, timeout=120).splitlines()[-1])
    )


def test_instrument_openai_and_configure_instrument_trace_a_real_call(
    installed: Installed, user_script: dict[str, object]
) -> None:
    found = user_script
    assert isinstance(found["tracesim"], str)
    assert Path(found["tracesim"]).is_relative_to(
        installed.python.parents[1]
    )  # the wheel's, not the checkout
    assert found["version"] == VERSION
    assert found["instrument_openai"] == [True, False]
    assert found["spans_after_instrument"] == [["chat gpt-4o-mini", "gpt-4o-mini"]]
    assert found["spans_after_configure"] == [["chat gpt-4o-mini", "gpt-4o-mini"]]
    assert found["instrument_after_configure"] is False


def test_an_integration_not_installed_names_its_extra(user_script: dict[str, object]) -> None:
    found = user_script
    message = "tracesim's anthropic integration needs its extra: pip install 'tracesim[anthropic]'"
    assert found["instrument_anthropic"] == [message, True]
    assert found["configure_anthropic"] == [message, True]


USER_TESTS = textwrap.dedent(
    """
    import json, os, sys

    PLUGIN = "tracesim.integrations.pytest_plugin"

    def test_the_plugin_is_loaded_once_by_its_entry_point(request):
        manager = request.config.pluginmanager
        modules = {"tracesim_pytest.plugin", PLUGIN}
        loaded = [manager.get_name(plugin) for plugin in manager.get_plugins()
                  if getattr(plugin, "__name__", None) in modules]
        with open(os.environ["PLUGINS_SEEN"], "w") as out:
            json.dump({"loaded": loaded, "old_path_imported": PLUGIN in sys.modules}, out)

    def test_scores_with_the_fixture(tracesim_eval):
        tracesim_eval.assert_passes("Hello World!", "Hello World", evaluators=["levenshtein:threshold=0.8"])
    """
)


def _run_user_pytest(installed: Installed, folder: Path, *options: str) -> tuple[str, dict[str, object]]:
    (folder / "pytest.ini").write_text("[pytest]\nfilterwarnings = error\n", encoding="utf-8")
    (folder / "test_user.py").write_text(USER_TESTS, encoding="utf-8")
    seen = folder / "plugins.json"
    done = subprocess.run(
        [str(installed.python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *options],
        cwd=folder,
        env=_clean_env(PLUGINS_SEEN=str(seen)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.stdout + done.stderr, json.loads(seen.read_text(encoding="utf-8"))


def test_the_pytest_plugin_loads_once_and_its_fixture_works(installed: Installed, tmp_path: Path) -> None:
    output, seen = _run_user_pytest(installed, tmp_path)
    assert "2 passed" in output, output
    assert seen == {"loaded": ["tracesim.integrations.pytest_plugin"], "old_path_imported": False}


def test_p_no_turns_the_pytest_plugin_off(installed: Installed, tmp_path: Path) -> None:
    output, seen = _run_user_pytest(installed, tmp_path, "-p", "no:tracesim.integrations.pytest_plugin")
    assert "fixture 'tracesim_eval' not found" in output, output
    assert "1 passed, 1 error" in output, output
    assert seen == {"loaded": [], "old_path_imported": False}
