"""Shared fixtures: every test starts unconfigured, in its own directory, with a clean environment."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_server import llm_server  # noqa: F401  (the scripted model server, a fixture)
from otlp_fixtures import make_batch, sink  # noqa: F401  (a scripted OTLP/HTTP endpoint, span batches)
from scripted_backend import scripted_backend  # noqa: F401  (an OTLP/HTTP backend answering as told)

from tracesim import _runtime

REPO = Path(__file__).resolve().parents[1]
SHARED = (REPO / ".." / "shared").resolve()
NLTK_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tracesim" / "nltk_data"

# NLTK data for BLEU/GLEU/METEOR, as `make test` finds it: NLTK_DATA as given, else the shared
# folder, else the folder `make test` downloads it into when that exists; NLTK's own search path
# (~/nltk_data, ...) always comes after. Set before anything imports nltk (it reads NLTK_DATA once).
if not os.environ.get("NLTK_DATA"):
    for _folder in (SHARED / "nltk_data", NLTK_CACHE):
        if _folder.is_dir():
            os.environ["NLTK_DATA"] = str(_folder)
            break

# No network: LiteLLM fetches its model price list from GitHub when imported, unless told to
# use the copy inside its wheel (read once, at import); the Agents SDK sends its own traces to
# OpenAI's servers when a key is set and its default processor is in place, so no test key
# reaches it from the machine's environment.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.pop("OPENAI_API_KEY", None)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    for key in list(os.environ):
        if key.startswith(("TRACESIM_", "OTEL_")):
            monkeypatch.delenv(key)
    # tracesim's own bugs must fail our tests, not be logged and hidden
    monkeypatch.setenv("TRACESIM_INTERNAL_ERRORS", "raise")
    # local test servers are reached directly, whatever proxy the machine sets
    for key in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(key, "127.0.0.1,localhost")
    monkeypatch.chdir(tmp_path)
    yield
    _runtime.shutdown(10)


class PythonRunner:
    """Runs code in a fresh interpreter: for process-global behaviour (providers, exit, fork)."""

    def __call__(
        self, code: str, *, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        full_env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACESIM_", "OTEL_"))}
        full_env.update(env or {})
        return subprocess.run(
            [sys.executable, "-c", code],
            cwd=cwd,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


@pytest.fixture
def run_python() -> PythonRunner:
    return PythonRunner()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under pytest-xdist (``make test`` runs ``-n auto``): the Phoenix tests all on one worker.

    Each of them needs the session's Phoenix server, and some stop and start it: one worker
    runs them in order, against one server, while the others take the remaining tests one by
    one. (pytest-xdist's own ``--dist loadgroup`` no longer groups under pytest 9.2, which
    ignores the node id it rewrites.) Scopes are sent largest first, so the Phoenix group,
    the longest, starts at once rather than last.
    """
    from xdist.scheduler import LoadScopeScheduling

    class PhoenixOnOneWorker(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            for group in ("tests/phoenix", "tests/mlflow"):  # one server each, on one worker
                if nodeid.startswith(group + "/"):
                    return group
            return nodeid

    return PhoenixOnOneWorker(config, log)
