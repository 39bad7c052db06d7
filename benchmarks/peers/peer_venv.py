"""The peers virtualenv: the OpenTelemetry and tracesim of this repository's venv, plus traceloop-sdk.

traceloop-sdk 0.62.4 requires some forty ``opentelemetry-instrumentation-*`` packages whose
newest releases pull an OpenTelemetry SDK other than the one tracesim is developed against, so
it cannot go into the main venv. This venv holds:

* every package the main venv has, at the main venv's version (a constraints file from its
  installed distributions), as far as tracesim's runtime dependencies and the packages below
  need them: the same OpenTelemetry API, SDK, exporters and protobuf;
* tracesim itself from this checkout, through a ``.pth`` file (not an editable install: that
  would rebuild the compiled redaction module inside the checkout, under the feet of anyone
  importing it meanwhile; the module the checkout holds is used as it is);
* Logfire and Langfuse, with their dependencies (optional columns);
* ``traceloop-sdk`` without its dependencies, and what it imports when its decorators are used:
  colorama, aiohttp, cuid, deprecated, jinja2, tenacity, its semantic conventions, and
  OpenTelemetry's logging and threading instrumentations (found by importing it until nothing
  was missing). The registry has no threading instrumentation at the main venv's exact
  pre-release, so the newest one not above it is installed without dependencies.

Built once under ``~/.cache/tracesim/peers-venv-<hash>`` (the hash covers the Python version,
the main venv's OpenTelemetry and protobuf versions and the lists here); a stamp file marks a
finished build, a lock file serialises concurrent builds. Standard library only.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TRACELOOP = "traceloop-sdk==0.62.4"
# What traceloop-sdk imports when its decorators are used; installed with their own dependencies.
TRACELOOP_IMPORTS = (
    "aiohttp",
    "colorama",
    "cuid",
    "deprecated",
    "jinja2",
    "tenacity",
    "opentelemetry-semantic-conventions-ai>=0.5.1,<0.6",
    "opentelemetry-instrumentation-logging",
)
# The optional peers (``bench_peers.py --with logfire langfuse``): installed with their own
# dependencies, which the main venv's versions satisfy.
OPTIONAL = ("logfire==5.4.0", "langfuse==5.0.4")
STAMP = ".peers-ready"
REPOSITORY = Path(__file__).resolve().parents[2]


def _pins() -> list[str]:
    """``name==version`` of every distribution in this (the main) venv but tracesim's own."""
    pins: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if name and not name.lower().startswith("tracesim"):
            pins.setdefault(name.lower(), f"{name}=={dist.version}")
    return sorted(pins.values())


def _runtime_requirements() -> list[str]:
    """tracesim's runtime dependencies (its repository-local pytest plugin left out)."""
    requires = importlib.metadata.requires("tracesim") or []
    return [r for r in requires if "extra ==" not in r and not r.startswith("tracesim")]


def _threading_instrumentation() -> str:
    try:
        newest = importlib.metadata.version("opentelemetry-instrumentation")
        return f"opentelemetry-instrumentation-threading<={newest}"
    except importlib.metadata.PackageNotFoundError:
        return "opentelemetry-instrumentation-threading"


def venv_path() -> Path:
    """Where the peers venv for this interpreter and this main venv lives."""
    key = [sys.version, *(p for p in _pins() if p.lower().startswith(("opentelemetry", "protobuf")))]
    key += [TRACELOOP, *TRACELOOP_IMPORTS, *OPTIONAL, _threading_instrumentation(), *_runtime_requirements()]
    digest = hashlib.sha256("\n".join(key).encode()).hexdigest()[:12]
    return Path.home() / ".cache" / "tracesim" / f"peers-venv-{digest}"


def python() -> Path:
    return venv_path() / "bin" / "python"


def ensure() -> tuple[Path | None, str]:
    """The peers venv's interpreter, building the venv first if needed; or ``None`` and why not."""
    venv = venv_path()
    if (venv / STAMP).exists():
        return python(), "cached"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.with_name(venv.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (venv / STAMP).exists():  # built by another process meanwhile
            return python(), "cached"
        shutil.rmtree(venv, ignore_errors=True)  # an unfinished build
        try:
            _build(venv)
        except (OSError, subprocess.CalledProcessError) as error:
            output = "".join(getattr(error, name, None) or "" for name in ("stdout", "stderr")) or str(error)
            shutil.rmtree(venv, ignore_errors=True)
            return None, f"building {venv} failed (no package registry?):\n{output[-1500:]}"
    return python(), f"built {venv}"


def _build(venv: Path) -> None:
    def run(*command: str | Path) -> None:
        subprocess.run(
            [str(c) for c in command], check=True, capture_output=True, text=True, stdin=subprocess.DEVNULL
        )

    run(sys.executable, "-m", "venv", venv)
    py = venv / "bin" / "python"
    with tempfile.TemporaryDirectory() as folder:
        constraints = Path(folder) / "constraints.txt"
        constraints.write_text("\n".join(_pins()) + "\n")
        pip = (py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "-c", constraints)
        run(*pip, *_runtime_requirements(), *TRACELOOP_IMPORTS, *OPTIONAL)
        run(*pip[:-2], "--no-deps", TRACELOOP, _threading_instrumentation())
    purelib = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(purelib) / "tracesim-checkout.pth").write_text(f"{REPOSITORY}\n")
    run(py, "-c", "import tracesim; from traceloop.sdk.decorators import workflow")
    (venv / STAMP).write_text("ready\n")


if __name__ == "__main__":
    interpreter, how = ensure()
    print(interpreter or "", how, sep="\n")
