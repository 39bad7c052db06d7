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

import contextlib
import hashlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

# Pinned: the version that installs and was measured here. Change it deliberately; the cache
# key follows this list, so a change builds a new venv.
REQUIREMENTS: tuple[str, ...] = ("arize-phoenix==20.26.1",)
_STAMP = ".tracesim-ready"
_OFFLINE_ENV = {
    "PHOENIX_TELEMETRY_ENABLED": "false",
    "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",  # no web fonts, telemetry or WASM download
    "PHOENIX_ALLOWED_SANDBOX_PROVIDERS": "NONE",
    "PHOENIX_AGENTS_DISABLE_BASH": "true",
    "PHOENIX_LOG_MIGRATIONS": "false",
}
SKIP_ENV = "TRACESIM_SKIP_PHOENIX"
_STOP_GRACE_S = 30.0


def _load_supervisor() -> ModuleType:
    # By path under a unique name, like conftest.py loads this module: the folder is no package.
    name = "tracesim_tests_phoenix_supervisor"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("_supervisor.py"))
        assert spec is not None
        assert spec.loader is not None
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


_supervisor = _load_supervisor()


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
    if override := os.environ.get("TRACESIM_PHOENIX_VENV"):
        return Path(override)
    key = "\n".join([f"python{sys.version_info[0]}.{sys.version_info[1]}", *sorted(requirements)])
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "tracesim" / f"phoenix-venv-{digest}"


def ensure_venv(requirements: Sequence[str] = REQUIREMENTS, *, log: Any = None) -> Path:
    """Return a ready Phoenix venv, building it first when it is missing or unfinished.

    Concurrent callers (two test runs) serialise on a lock file next to the venv.

    Raises:
        PhoenixUnavailable: pip failed (for instance, no package registry); the message
            holds the tail of pip's output.
    """
    venv = venv_path(requirements)
    if _ready(venv, requirements):
        return venv
    venv.parent.mkdir(parents=True, exist_ok=True)
    import fcntl

    with open(venv.with_name(venv.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _ready(venv, requirements):  # another process may have built it meanwhile
            _build(venv, requirements, log)
    return venv


def _ready(venv: Path, requirements: Sequence[str]) -> bool:
    stamp = venv / _STAMP
    return stamp.is_file() and stamp.read_text() == "\n".join(requirements) and _phoenix_bin(venv).is_file()


def _phoenix_bin(venv: Path) -> Path:
    return venv / "bin" / "phoenix"


def _build(venv: Path, requirements: Sequence[str], log: Any) -> None:
    shutil.rmtree(venv, ignore_errors=True)  # a half-built venv is never reused
    install_log = venv.with_name(venv.name + ".install.log")
    started = time.monotonic()
    if log:
        print(f"building Phoenix venv {venv} ({', '.join(requirements)}); log: {install_log}", file=log)
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
                raise PhoenixUnavailable(
                    f"could not build the Phoenix venv ({' '.join(requirements)}): "
                    f"`{' '.join(command[:4])} ...` exited {result.returncode}. A package registry "
                    f"(PyPI) is needed once; later runs use the cache.\n{_tail(install_log)}"
                )
    (venv / _STAMP).write_text("\n".join(requirements))
    if log:
        print(f"Phoenix venv ready in {time.monotonic() - started:.0f} s", file=log)


def _tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"(no log at {path})"
    return f"--- last {lines} lines of {path} ---\n" + "\n".join(text[-lines:])


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


class PhoenixServer:
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
        self.start_durations_s: list[float] = []
        self._process: subprocess.Popen[bytes] | None = None
        self._keepalive: int | None = None  # our end of the supervisor's pipe

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
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

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
        started = time.monotonic()
        with open(self.log_path, "ab") as log:
            log.write(f"\n=== phoenix serve, ports http={self.http_port} grpc={self.grpc_port}\n".encode())
            log.flush()
            self._process, self._keepalive = _supervisor.spawn(
                [str(_phoenix_bin(self.venv)), "serve"], grace_s=_STOP_GRACE_S, stdout=log, env=env
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
                raise PhoenixUnavailable(
                    f"phoenix serve exited with status {self._process.returncode} while starting\n"
                    + _tail(self.log_path)
                )
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.http_endpoint}/healthz", timeout=2.0).status_code == 200:
                    return
            time.sleep(0.2)  # polling a remote server with a deadline
        raise PhoenixUnavailable(
            f"phoenix serve was not healthy after {self.start_timeout_s:.0f} s\n" + _tail(self.log_path)
        )

    def stop(self, timeout_s: float = _STOP_GRACE_S) -> None:
        """Stop Phoenix gracefully (SIGTERM to its process group), SIGKILL after ``timeout_s``."""
        process, self._process = self._process, None
        keepalive, self._keepalive = self._keepalive, None
        if process is None:
            return
        pgid = process.pid  # the supervisor leads the group (start_new_session)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGTERM)
        try:
            process.wait(timeout_s)  # the supervisor exits once Phoenix has
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
            process.wait(10)
        # Anything left in the group (a worker that ignored SIGTERM) goes too.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        if keepalive is not None:
            _supervisor.release(keepalive)

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
    command = argv[0] if argv else "ensure-venv"
    try:
        venv = ensure_venv(log=sys.stderr)
    except PhoenixUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if command == "ensure-venv":
        print(venv)
        return 0
    if command == "serve":
        server = PhoenixServer(venv)
        server.start()
        print(f"Phoenix: {server.http_endpoint} (gRPC {server.grpc_endpoint}); Ctrl-C stops", flush=True)
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
