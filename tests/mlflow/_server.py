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

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# The shared harness parts, in tests/: on sys.path under pytest, added here for a script run.
if str(Path(__file__).resolve().parents[1]) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _venv_server

# Pinned: the version measured here (3.18.0 needs an mlflow-skinny the registry does not serve).
REQUIREMENTS: tuple[str, ...] = ("mlflow==3.17.2",)
OFFLINE_ENV = {
    "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",  # no job runner and its consumer processes
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "DO_NOT_TRACK": "true",
}
SKIP_ENV = "TRACESIM_SKIP_MLFLOW"
_STOP_GRACE_S = 20.0


class MlflowUnavailable(RuntimeError):
    """MLflow could not be installed or started; the message says what is missing."""


# ---------------------------------------------------------------- the virtualenv


def venv_path(requirements: Sequence[str] = REQUIREMENTS) -> Path:
    """Where the venv for ``requirements`` lives (``TRACESIM_MLFLOW_VENV`` overrides)."""
    return _venv_server.venv_path("mlflow", requirements, "TRACESIM_MLFLOW_VENV")


def ensure_venv(requirements: Sequence[str] = REQUIREMENTS, *, log: Any = None) -> Path:
    """Return a ready MLflow venv, building it first when it is missing or unfinished.

    Concurrent callers serialise on a lock file next to the venv.

    Raises:
        MlflowUnavailable: pip failed (for instance, no package registry); the message holds
            the tail of pip's output.
    """
    return _venv_server.ensure_venv(
        venv_path(requirements),
        requirements,
        executable="mlflow",
        label="MLflow",
        error=MlflowUnavailable,
        log=log,
    )


def _mlflow_bin(venv: Path) -> Path:
    return venv / "bin" / "mlflow"


# ---------------------------------------------------------------- the server

free_port = _venv_server.free_port


class MlflowServer(_venv_server.SupervisedServer):
    """One ``mlflow server`` (one worker, sqlite store in a temporary directory).

    Example:
        >>> server = MlflowServer(ensure_venv())  # doctest: +SKIP
        >>> server.start()  # doctest: +SKIP
        >>> server.read_assessments(["tr-..."])  # doctest: +SKIP
        >>> server.close()  # doctest: +SKIP
    """

    def __init__(self, venv: Path, *, start_timeout_s: float = 180.0) -> None:
        super().__init__()
        self.venv = venv
        self.working_dir = Path(tempfile.mkdtemp(prefix="tracesim-mlflow-"))
        self.port = free_port()
        self.start_timeout_s = start_timeout_s
        self.log_path = self.working_dir / "server.log"

    @property
    def url(self) -> str:
        """Base URL: UI, REST (``/api/...``) and OTLP/HTTP (``/v1/traces``)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def traces_url(self) -> str:
        return f"{self.url}/v1/traces"

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
        self._launch(
            command,
            env={**os.environ, **OFFLINE_ENV},
            grace_s=_STOP_GRACE_S,
            health_url=f"{self.url}/health",
            what="mlflow server",
            error=MlflowUnavailable,
        )

    def stop(self) -> None:
        """SIGTERM to the server's process group, SIGKILL to what is left after the grace."""
        self._stop_group(_STOP_GRACE_S)

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
    return _venv_server.script_main(
        argv,
        ensure=ensure_venv,
        error=MlflowUnavailable,
        server=MlflowServer,
        banner=lambda s: f"MLflow: {s.url} (OTLP {s.traces_url}); Ctrl-C stops",
        script=Path(__file__).name,
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
