"""Arize Phoenix as a real OTLP backend for the test suite.

Two jobs, usable from pytest (``conftest.py``) and from a shell before pytest runs:

* ``ensure_venv()`` builds Phoenix's own virtualenv (outside tracesim's, so its ~160
  dependencies cannot leak into our imports) and caches it between runs under
  ``~/.cache/tracesim/phoenix-venv-<hash of the pinned requirements and Python version>``.
  A stamp file is written only after a successful install, so an interrupted build is
  thrown away and rebuilt rather than half-used. ``python tests/phoenix/_server.py ensure-venv``
  prints the path.
* ``PhoenixServer`` runs ``phoenix serve`` on free loopback ports with a temporary working
  dir, restarts it on the same ports and data (for the fault test), stops it by process group,
  and reads spans and annotations back through the REST API. The server runs under
  ``_supervisor.py``, which ends it when the test process dies, even by SIGKILL.

Facts measured here (Phoenix 20.26.1, 2 cores, Python 3.11), which the exporters rely on:

* ``POST /v1/traces`` accepts only ``Content-Type: application/x-protobuf``; OTLP/JSON gets
  ``415 Unsupported content type: application/json``. So ``tracesim replay`` converts each
  JSON line to the equivalent protobuf request (lossless) when an endpoint answers 415.
* A second copy of a span (same span id) is ignored: spans are inserted with
  ``ON CONFLICT (span_id) DO NOTHING``; the first copy wins, no duplicate row, no error. The
  HTTP answer is 200 either way (ingestion happens after the response, in a background task
  per request; these interleave, so a span that is stored does not prove that one accepted
  earlier is).
* An empty ``ExportTraceServiceRequest`` is answered 200 (HTTP and gRPC): a cheap health probe.
* ``POST /v1/span_annotations?sync=true`` answers 404 ``Spans with IDs a, b do not exist.`` when
  any span of the batch is not ingested yet; annotations upsert on (name, span, identifier).
* Install: 56 s into a fresh venv (warm pip cache: less); 855 MB. Start-up to ``/healthz``:
  9 s on an idle machine, up to 45 s on a busy one (feasibility.md), hence the 180 s limit.
* SIGTERM is a graceful stop, within limits: Phoenix keeps storing its span insert queue for
  at most 5 s (``BulkInserter(shutdown_drain_sec=5.0)``, no setting), then drops what is left
  and logs "Span ingestion stopped with N spans still pending". Idle, nothing is lost; stopped
  mid-run on a loaded 2-core machine it dropped 101 to 288 spans it had answered 200 for (test_fault).
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

# The shared harness parts, in tests/: on sys.path under pytest, added here for a script run.
if str(Path(__file__).resolve().parents[1]) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _venv_server

# Pinned: the version that installs and was measured here. Change it deliberately; the cache
# key follows this list, so a change builds a new venv.
REQUIREMENTS: tuple[str, ...] = ("arize-phoenix==20.26.1",)
_OFFLINE_ENV = {
    "PHOENIX_TELEMETRY_ENABLED": "false",
    "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",  # no web fonts, telemetry or WASM download
    "PHOENIX_ALLOWED_SANDBOX_PROVIDERS": "NONE",
    "PHOENIX_AGENTS_DISABLE_BASH": "true",
    "PHOENIX_LOG_MIGRATIONS": "false",
}
SKIP_ENV = "TRACESIM_SKIP_PHOENIX"
_STOP_GRACE_S = 30.0


class PhoenixUnavailable(RuntimeError):
    """Phoenix could not be installed or started; the message says what is missing."""


class ReadBackTimeout(AssertionError):
    """Phoenix did not show the expected number of items in time.

    A test fails with it instead of checking a partial list, so a slow server never reads
    as lost data; the message says how many items were seen.
    """


# ---------------------------------------------------------------- the virtualenv


def venv_path(requirements: Sequence[str] = REQUIREMENTS) -> Path:
    """Where the venv for ``requirements`` lives (``TRACESIM_PHOENIX_VENV`` overrides)."""
    return _venv_server.venv_path("phoenix", requirements, "TRACESIM_PHOENIX_VENV")


def ensure_venv(requirements: Sequence[str] = REQUIREMENTS, *, log: Any = None) -> Path:
    """Return a ready Phoenix venv, building it first when it is missing or unfinished.

    Concurrent callers (two test runs) serialise on a lock file next to the venv.

    Raises:
        PhoenixUnavailable: pip failed (for instance, no package registry); the message
            holds the tail of pip's output.
    """
    return _venv_server.ensure_venv(
        venv_path(requirements),
        requirements,
        executable="phoenix",
        label="Phoenix",
        error=PhoenixUnavailable,
        log=log,
    )


def _phoenix_bin(venv: Path) -> Path:
    return venv / "bin" / "phoenix"


# ---------------------------------------------------------------- the server


def free_port() -> int:
    """A TCP port free on both 127.0.0.1 and ``[::]`` (Phoenix's gRPC server binds ``[::]``)."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port: int = s.getsockname()[1]
        try:
            with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s6:
                s6.bind(("::", port))
        except OSError:
            continue
        return port
    raise PhoenixUnavailable("no free TCP port found on loopback")


class PhoenixServer(_venv_server.SupervisedServer):
    """One ``phoenix serve`` process with fixed ports and working dir across restarts.

    Example:
        >>> server = PhoenixServer(ensure_venv())  # doctest: +SKIP
        >>> server.start()  # doctest: +SKIP
        >>> spans = server.spans("my-project", min_count=3)  # doctest: +SKIP
        >>> server.close()  # doctest: +SKIP
    """

    def __init__(
        self, venv: Path, working_dir: Path | None = None, *, start_timeout_s: float = 180.0
    ) -> None:
        super().__init__()
        self.venv = venv
        self._own_dir = working_dir is None
        self.working_dir = working_dir or Path(tempfile.mkdtemp(prefix="tracesim-phoenix-"))
        self.working_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.http_port = free_port()
        self.grpc_port = free_port()
        while self.grpc_port == self.http_port:
            self.grpc_port = free_port()
        self.start_timeout_s = start_timeout_s
        self.log_path = self.working_dir / "server.log"

    @property
    def http_endpoint(self) -> str:
        """Base URL: UI, REST (``/v1/...``) and OTLP/HTTP (``/v1/traces``)."""
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def traces_url(self) -> str:
        """The OTLP/HTTP traces URL."""
        return f"{self.http_endpoint}/v1/traces"

    @property
    def grpc_endpoint(self) -> str:
        """The OTLP/gRPC endpoint, plaintext."""
        return f"http://127.0.0.1:{self.grpc_port}"

    @property
    def pgid(self) -> int | None:
        """The process group of the supervisor and Phoenix while running, else None."""
        return self._process.pid if self.running and self._process is not None else None

    def start(self) -> None:
        """Start Phoenix and wait until ``/healthz`` answers 200."""
        if self.running:
            return
        env = {
            **os.environ,
            **_OFFLINE_ENV,
            "PHOENIX_WORKING_DIR": str(self.working_dir),
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(self.http_port),
            "PHOENIX_GRPC_PORT": str(self.grpc_port),
        }
        self._launch(
            [str(_phoenix_bin(self.venv)), "serve"],
            env=env,
            grace_s=_STOP_GRACE_S,
            health_url=f"{self.http_endpoint}/healthz",
            what="phoenix serve",
            error=PhoenixUnavailable,
            heading=f"\n=== phoenix serve, ports http={self.http_port} grpc={self.grpc_port}\n",
        )

    def stop(self, timeout_s: float = _STOP_GRACE_S) -> None:
        """Stop Phoenix gracefully (SIGTERM to its process group), SIGKILL after ``timeout_s``."""
        self._stop_group(timeout_s)

    def restart(self) -> None:
        """Stop and start again on the same ports and working dir (data kept)."""
        self.stop()
        self.start()

    def close(self) -> None:
        """Stop, and delete the working dir if this object made it."""
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.working_dir, ignore_errors=True)

    # ------------------------------------------------------------ reading back

    def _get_pages(self, path: str, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
        import httpx

        cursor = None
        with httpx.Client(base_url=self.http_endpoint, timeout=30.0) as client:
            while True:
                page_params = {**params, **({"cursor": cursor} if cursor else {})}
                response = client.get(path, params=page_params)
                if response.status_code == 404:  # project not created yet: nothing ingested
                    return
                response.raise_for_status()
                body = response.json()
                yield from body["data"]
                cursor = body.get("next_cursor")
                if not cursor:
                    return

    def all_spans(self, project: str) -> list[dict[str, Any]]:
        """Every span of ``project`` (REST ``GET /v1/projects/{project}/spans``, all pages)."""
        return list(self._get_pages(f"/v1/projects/{project}/spans", {"limit": 1000}))

    def spans(self, project: str, *, min_count: int = 1, timeout_s: float = 60.0) -> list[dict[str, Any]]:
        """The spans of ``project`` once at least ``min_count`` are visible.

        Phoenix ingests after answering the export, so a short poll is needed.

        Raises:
            ReadBackTimeout: fewer than ``min_count`` spans after ``timeout_s``.
        """
        return _poll(
            lambda: self.all_spans(project), min_count, timeout_s, f"spans in Phoenix project {project!r}"
        )

    def span_annotations(
        self, project: str, span_ids: Sequence[str], *, min_count: int = 1, timeout_s: float = 60.0
    ) -> list[dict[str, Any]]:
        """Span annotations of ``span_ids``, once at least ``min_count`` are visible.

        Raises:
            ReadBackTimeout: fewer than ``min_count`` annotations after ``timeout_s``.
        """
        path = f"/v1/projects/{project}/span_annotations"
        params = {"span_ids": list(span_ids), "limit": 1000}
        return _poll(
            lambda: list(self._get_pages(path, params)),
            min_count,
            timeout_s,
            f"annotations of {len(span_ids)} spans in Phoenix project {project!r}",
        )


def _poll(
    read: Callable[[], list[dict[str, Any]]], min_count: int, timeout_s: float, what: str
) -> list[dict[str, Any]]:
    started = time.monotonic()
    while True:
        found = read()
        waited = time.monotonic() - started
        if len(found) >= min_count:
            return found
        if waited >= timeout_s:
            raise ReadBackTimeout(f"timed out after {waited:.0f} s with {len(found)} of {min_count} {what}")
        time.sleep(0.2)  # polling a remote server with a deadline


def main(argv: Sequence[str]) -> int:
    """``ensure-venv``: build or find the venv and print its path. ``serve``: run until Ctrl-C."""
    return _venv_server.script_main(
        argv,
        ensure=ensure_venv,
        error=PhoenixUnavailable,
        server=PhoenixServer,
        banner=lambda s: f"Phoenix: {s.http_endpoint} (gRPC {s.grpc_endpoint}); Ctrl-C stops",
        script=Path(__file__).name,
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
