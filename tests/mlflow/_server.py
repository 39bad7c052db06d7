"""MLflow's tracking server as a real OTLP backend (and assessment store) for the test suite.

Usable from pytest (``conftest.py``) and from a shell before pytest runs:

* ``ensure_venv()`` builds MLflow's own virtualenv (outside tracesim's: MLflow pins its own
  OpenTelemetry and brings pandas, scikit-learn, pyarrow...) and caches it between runs under
  ``~/.cache/tracesim/mlflow-venv-<hash of the pinned requirements and Python version>``. A
  stamp is written only after a successful install, so an interrupted build is rebuilt.
  ``python tests/mlflow/_server.py ensure-venv`` prints the path.
* ``MlflowServer`` runs ``mlflow server`` on a free loopback port with a sqlite store in a
  temporary directory, as the leader of a process group that ends with it (and with the test
  process, through Phoenix's ``_supervisor.py``).
* ``read_assessments(...)`` reads assessments back through MLflow's *own* client
  (``mlflow.get_trace(...).info.assessments``), run in that virtualenv.

Facts measured here (MLflow 3.17.2, 2 cores, Python 3.11):

* ``--workers 1`` with ``MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false`` is two processes (the
  ``mlflow server`` parent and one uvicorn worker) and healthy in about 8 s on a fresh store;
  without them, four workers and a job runner with seven consumers take about 25 s.
* ``POST /v1/traces`` requires the header ``x-mlflow-experiment-id`` (422 without it);
  experiment ``0`` ("Default") exists in a fresh store.
* An assessment posted for a trace with no span ingested yet is answered 404; assessments are
  never deduplicated by MLflow.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

# Pinned: the version measured here (3.18.0 needs an mlflow-skinny the registry does not serve).
REQUIREMENTS: tuple[str, ...] = ("mlflow==3.17.2",)
_STAMP = ".tracesim-ready"
OFFLINE_ENV = {
    "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",  # no job runner and its consumer processes
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "DO_NOT_TRACK": "true",
}
SKIP_ENV = "TRACESIM_SKIP_MLFLOW"
_STOP_GRACE_S = 20.0


def _load_supervisor() -> ModuleType:
    # Phoenix's supervisor, by path under a unique name (the test folders are no packages).
    name = "tracesim_tests_phoenix_supervisor"
    if name not in sys.modules:
        path = Path(__file__).parent.parent / "phoenix" / "_supervisor.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None
        assert spec.loader is not None
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


_supervisor = _load_supervisor()


class MlflowUnavailable(RuntimeError):
    """MLflow could not be installed or started; the message says what is missing."""


# ---------------------------------------------------------------- the virtualenv


def venv_path(requirements: Sequence[str] = REQUIREMENTS) -> Path:
    """Where the venv for ``requirements`` lives (``TRACESIM_MLFLOW_VENV`` overrides)."""
    if override := os.environ.get("TRACESIM_MLFLOW_VENV"):
        return Path(override)
    key = "\n".join([f"python{sys.version_info[0]}.{sys.version_info[1]}", *sorted(requirements)])
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "tracesim" / f"mlflow-venv-{digest}"


def ensure_venv(requirements: Sequence[str] = REQUIREMENTS, *, log: Any = None) -> Path:
    """Return a ready MLflow venv, building it first when it is missing or unfinished.

    Concurrent callers serialise on a lock file next to the venv.

    Raises:
        MlflowUnavailable: pip failed (for instance, no package registry); the message holds
            the tail of pip's output.
    """
    venv = venv_path(requirements)
    if _ready(venv, requirements):
        return venv
    venv.parent.mkdir(parents=True, exist_ok=True)
    import fcntl

    with open(venv.with_name(venv.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _ready(venv, requirements):
            _build(venv, requirements, log)
    return venv


def _ready(venv: Path, requirements: Sequence[str]) -> bool:
    stamp = venv / _STAMP
    return stamp.is_file() and stamp.read_text() == "\n".join(requirements) and _mlflow_bin(venv).is_file()


def _mlflow_bin(venv: Path) -> Path:
    return venv / "bin" / "mlflow"


def _build(venv: Path, requirements: Sequence[str], log: Any) -> None:
    shutil.rmtree(venv, ignore_errors=True)  # a half-built venv is never reused
    install_log = venv.with_name(venv.name + ".install.log")
    started = time.monotonic()
    if log:
        print(f"building MLflow venv {venv} ({', '.join(requirements)}); log: {install_log}", file=log)
    with open(install_log, "w") as out:
        for command in (
            [sys.executable, "-m", "venv", str(venv)],
            [
                str(venv / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                *requirements,
            ],
        ):
            out.write(f"$ {' '.join(command)}\n")
            out.flush()
            result = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False)
            if result.returncode != 0:
                shutil.rmtree(venv, ignore_errors=True)
                raise MlflowUnavailable(
                    f"could not build the MLflow venv ({' '.join(requirements)}): "
                    f"`{' '.join(command[:4])} ...` exited {result.returncode}. A package registry "
                    f"(PyPI) is needed once; later runs use the cache.\n{_tail(install_log)}"
                )
    (venv / _STAMP).write_text("\n".join(requirements))
    if log:
        print(f"MLflow venv ready in {time.monotonic() - started:.0f} s", file=log)


def _tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"(no log at {path})"
    return f"--- last {lines} lines of {path} ---\n" + "\n".join(text[-lines:])


# ---------------------------------------------------------------- the server


def free_port() -> int:
    """A TCP port free on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


class MlflowServer:
    """One ``mlflow server`` (one worker, sqlite store in a temporary directory).

    Example:
        >>> server = MlflowServer(ensure_venv())  # doctest: +SKIP
        >>> server.start()  # doctest: +SKIP
        >>> server.read_assessments(["tr-..."])  # doctest: +SKIP
        >>> server.close()  # doctest: +SKIP
    """

    def __init__(self, venv: Path, *, start_timeout_s: float = 180.0) -> None:
        self.venv = venv
        self.working_dir = Path(tempfile.mkdtemp(prefix="tracesim-mlflow-"))
        self.port = free_port()
        self.start_timeout_s = start_timeout_s
        self.log_path = self.working_dir / "server.log"
        self.start_durations_s: list[float] = []
        self._process: subprocess.Popen[bytes] | None = None
        self._keepalive: int | None = None

    @property
    def url(self) -> str:
        """Base URL: UI, REST (``/api/...``) and OTLP/HTTP (``/v1/traces``)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def traces_url(self) -> str:
        return f"{self.url}/v1/traces"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def client_env(self) -> dict[str, str]:
        """The environment of an MLflow client process talking to this server."""
        return {**os.environ, **OFFLINE_ENV, "MLFLOW_TRACKING_URI": self.url}

    def start(self) -> None:
        """Start the server and wait until ``/health`` answers 200."""
        if self.running:
            return
        command = [
            str(_mlflow_bin(self.venv)),
            "server",
            "--backend-store-uri",
            f"sqlite:///{self.working_dir / 'mlflow.db'}",
            "--default-artifact-root",
            str(self.working_dir / "artifacts"),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--workers",
            "1",
        ]
        env = {**os.environ, **OFFLINE_ENV}
        started = time.monotonic()
        with open(self.log_path, "ab") as log:
            self._process, self._keepalive = _supervisor.spawn(
                command, grace_s=_STOP_GRACE_S, stdout=log, env=env
            )
        try:
            self._wait_healthy(started)
        except BaseException:
            self.stop()
            raise
        self.start_durations_s.append(time.monotonic() - started)

    def _wait_healthy(self, started: float) -> None:
        import httpx

        deadline = started + self.start_timeout_s
        assert self._process is not None
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise MlflowUnavailable(
                    f"mlflow server exited with status {self._process.returncode} while starting\n"
                    + _tail(self.log_path)
                )
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/health", timeout=2.0).status_code == 200:
                    return
            time.sleep(0.2)  # polling a remote server with a deadline
        raise MlflowUnavailable(
            f"mlflow server was not healthy after {self.start_timeout_s:.0f} s\n" + _tail(self.log_path)
        )

    def stop(self) -> None:
        """SIGTERM to the server's process group, SIGKILL to what is left after the grace."""
        process, self._process = self._process, None
        keepalive, self._keepalive = self._keepalive, None
        if process is None:
            return
        pgid = process.pid  # the supervisor leads the group
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGTERM)
        try:
            process.wait(_STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
            process.wait(10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        if keepalive is not None:
            _supervisor.release(keepalive)

    def close(self) -> None:
        """Stop, and delete the store."""
        self.stop()
        shutil.rmtree(self.working_dir, ignore_errors=True)

    # ------------------------------------------------------------ reading back

    def read_assessments(self, trace_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        """Each trace's assessments as MLflow's client gives them (``Assessment.to_dictionary()``).

        ``trace_ids`` are MLflow's (``tr-<32 hex>``); a trace MLflow does not have maps to None.
        """
        return self._client_read(trace_ids, "[a.to_dictionary() for a in trace.info.assessments]")

    def read_traces(self, trace_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Each whole trace (info, assessments, spans) as MLflow's client gives it (``Trace.to_dict()``)."""
        return self._client_read(trace_ids, "trace.to_dict()")

    def _client_read(self, trace_ids: Sequence[str], expression: str) -> dict[str, Any]:
        code = (
            "import json, sys, mlflow\n"
            "out = {}\n"
            "for tid in json.loads(sys.argv[1]):\n"
            "    trace = mlflow.get_trace(tid)\n"
            f"    out[tid] = None if trace is None else {expression}\n"
            "print(json.dumps(out, default=str))\n"
        )
        result = subprocess.run(
            [str(self.venv / "bin" / "python"), "-c", code, json.dumps(list(trace_ids))],
            env=self.client_env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if result.returncode != 0:
            raise AssertionError(f"mlflow.get_trace failed ({result.returncode}):\n{result.stderr[-3000:]}")
        found: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
        return found


def main(argv: Sequence[str]) -> int:
    """``ensure-venv``: build or find the venv and print its path. ``serve``: run until Ctrl-C."""
    command = argv[0] if argv else "ensure-venv"
    try:
        venv = ensure_venv(log=sys.stderr)
    except MlflowUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if command == "ensure-venv":
        print(venv)
        return 0
    if command == "serve":
        server = MlflowServer(venv)
        server.start()
        print(f"MLflow: {server.url} (OTLP {server.traces_url}); Ctrl-C stops", flush=True)
        try:
            signal.pause()
        except KeyboardInterrupt:
            pass
        finally:
            server.close()
        return 0
    print(f"usage: {Path(__file__).name} [ensure-venv|serve]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
