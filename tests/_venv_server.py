"""What the real-backend test harnesses share: a cached virtualenv and a supervised server process.

``tests/phoenix/_server.py`` and ``tests/mlflow/_server.py`` each run a backend from a
virtualenv of its own (outside tracesim's, so the backend's pinned dependencies cannot leak
into our imports); ``tests/prometheus/_server.py`` runs Debian's binary. The parts they have in
common live here:

* ``venv_path`` / ``ensure_venv``: the venv for a list of pinned requirements, cached between
  runs under ``~/.cache/tracesim/<name>-venv-<hash of the requirements and Python version>``.
  A stamp file is written only after a successful install, so an interrupted build is thrown
  away and rebuilt rather than half-used; concurrent callers serialise on a lock file.
* ``free_port``, ``wait_healthy``, ``stop_group``: a loopback port, polling a health URL while
  the process lives, and SIGTERM-then-SIGKILL to the process group ``_supervisor.py`` leads;
  ``SupervisedServer``, a server class's start and stop made of them.
* ``script_main``: the ``ensure-venv`` / ``serve`` command line of a harness run as a script.
* ``load_by_path``: a module loaded from its file under a unique name (the test folders are no
  packages, and several hold a ``_server.py``).

Standard library only at import (httpx is imported by ``wait_healthy`` when called): a
harness run as a script (``python tests/phoenix/_server.py ensure-venv``) imports this too.
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
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

STAMP = ".tracesim-ready"
_TESTS = Path(__file__).resolve().parent


def load_by_path(name: str, path: Path) -> ModuleType:
    """The module at ``path``, executed once and kept in ``sys.modules`` as ``name``.

    Example:
        >>> load_by_path("tracesim_tests_venv_server_doc", Path(__file__)).STAMP
        '.tracesim-ready'
    """
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None
        assert spec.loader is not None
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


def supervisor() -> ModuleType:
    """``tests/phoenix/_supervisor.py``, which ends a server with the test process (even on SIGKILL)."""
    return load_by_path("tracesim_tests_phoenix_supervisor", _TESTS / "phoenix" / "_supervisor.py")


# ---------------------------------------------------------------- the virtualenv


def venv_path(name: str, requirements: Sequence[str], override_env: str) -> Path:
    """Where the venv ``name`` for ``requirements`` lives (the variable ``override_env`` overrides).

    The key is the Python version and the sorted requirements: CI caches these directories, so
    it changes only when what would be installed changes.

    Example:
        >>> p = venv_path("demo", ["b==1", "a==2"], "TRACESIM_NO_SUCH_VARIABLE")
        >>> p.parent.name, p.name.startswith("demo-venv-"), len(p.name) - len("demo-venv-")
        ('tracesim', True, 12)
    """
    if override := os.environ.get(override_env):
        return Path(override)
    key = "\n".join([f"python{sys.version_info[0]}.{sys.version_info[1]}", *sorted(requirements)])
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "tracesim" / f"{name}-venv-{digest}"


def ensure_venv(
    venv: Path,
    requirements: Sequence[str],
    *,
    executable: str,
    label: str,
    error: type[Exception],
    log: Any = None,
) -> Path:
    """Return ``venv`` ready, building it first when it is missing or unfinished.

    Ready means: the stamp holds ``requirements`` and ``bin/<executable>`` exists. Concurrent
    callers (two test runs) serialise on a lock file next to the venv.

    Raises:
        error: pip failed (for instance, no package registry); the message names ``label`` and
            holds the tail of pip's output.
    """
    if _ready(venv, requirements, executable):
        return venv
    venv.parent.mkdir(parents=True, exist_ok=True)
    import fcntl

    with open(venv.with_name(venv.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _ready(venv, requirements, executable):  # another process may have built it meanwhile
            _build(venv, requirements, label, error, log)
    return venv


def _ready(venv: Path, requirements: Sequence[str], executable: str) -> bool:
    stamp = venv / STAMP
    return (
        stamp.is_file()
        and stamp.read_text() == "\n".join(requirements)
        and (venv / "bin" / executable).is_file()
    )


def _build(venv: Path, requirements: Sequence[str], label: str, error: type[Exception], log: Any) -> None:
    shutil.rmtree(venv, ignore_errors=True)  # a half-built venv is never reused
    install_log = venv.with_name(venv.name + ".install.log")
    started = time.monotonic()
    if log:
        print(f"building {label} venv {venv} ({', '.join(requirements)}); log: {install_log}", file=log)
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
                raise error(
                    f"could not build the {label} venv ({' '.join(requirements)}): "
                    f"`{' '.join(command[:4])} ...` exited {result.returncode}. A package registry "
                    f"(PyPI) is needed once; later runs use the cache.\n{tail(install_log)}"
                )
    (venv / STAMP).write_text("\n".join(requirements))
    if log:
        print(f"{label} venv ready in {time.monotonic() - started:.0f} s", file=log)


def tail(path: Path, lines: int = 30) -> str:
    """The last ``lines`` lines of the log at ``path``, headed by its name, for an error message.

    Example:
        >>> tail(Path("/no/such.log"))
        '(no log at /no/such.log)'
    """
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"(no log at {path})"
    return f"--- last {lines} lines of {path} ---\n" + "\n".join(text[-lines:])


# ---------------------------------------------------------------- the server process


def free_port() -> int:
    """A TCP port free on 127.0.0.1 just now (the caller binds it soon after)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def wait_healthy(
    process: subprocess.Popen[bytes],
    url: str,
    *,
    started: float,
    timeout_s: float,
    log_path: Path,
    what: str,
    error: type[Exception],
) -> None:
    """Poll ``url`` until it answers 200; raise ``error`` if ``process`` exits or ``timeout_s`` passes.

    The message names ``what`` (``"phoenix serve"``) and holds the tail of ``log_path``.
    """
    import httpx

    deadline = started + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise error(f"{what} exited with status {process.returncode} while starting\n" + tail(log_path))
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=2.0).status_code == 200:
                return
        time.sleep(0.2)  # polling a remote server with a deadline
    raise error(f"{what} was not healthy after {timeout_s:.0f} s\n" + tail(log_path))


def stop_group(process: subprocess.Popen[bytes] | None, keepalive: int | None, timeout_s: float) -> None:
    """Stop the process group ``process`` leads: SIGTERM, then SIGKILL after ``timeout_s``.

    ``process`` is the supervisor (it leads the group, and exits once the server has);
    ``keepalive`` is our end of its pipe, closed last. Anything left in the group afterwards
    (a worker that ignored SIGTERM) is killed too.
    """
    if process is not None:
        pgid = process.pid
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGTERM)
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
            process.wait(10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
    if keepalive is not None:
        supervisor().release(keepalive)


class SupervisedServer:
    """A server process under ``_supervisor.py``: started, awaited healthy, stopped by process group.

    A harness's server class derives from this, calls ``__init__`` first, sets ``log_path``
    and ``start_timeout_s``, starts with ``_launch(...)`` and stops with ``_stop_group(...)``.
    """

    log_path: Path
    start_timeout_s: float

    def __init__(self) -> None:
        self.start_durations_s: list[float] = []  # one per start, to the first healthy answer
        self._process: subprocess.Popen[bytes] | None = None  # the supervisor, leading the group
        self._keepalive: int | None = None  # our end of the supervisor's pipe

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def stop(self) -> None:
        raise NotImplementedError

    def _launch(
        self,
        command: Sequence[str],
        *,
        env: dict[str, str],
        grace_s: float,
        health_url: str,
        what: str,
        error: type[Exception],
        heading: str = "",
    ) -> None:
        """Spawn ``command`` (output to ``log_path``, after ``heading``) and wait for ``health_url``.

        A server that does not become healthy is stopped, and ``error`` raised (``wait_healthy``).
        """
        started = time.monotonic()
        with open(self.log_path, "ab") as log:
            if heading:
                log.write(heading.encode())
                log.flush()
            self._process, self._keepalive = supervisor().spawn(
                list(command), grace_s=grace_s, stdout=log, env=env
            )
        try:
            wait_healthy(
                self._process,
                health_url,
                started=started,
                timeout_s=self.start_timeout_s,
                log_path=self.log_path,
                what=what,
                error=error,
            )
        except BaseException:
            self.stop()
            raise
        self.start_durations_s.append(time.monotonic() - started)

    def _stop_group(self, timeout_s: float) -> None:
        """``stop_group`` for this server's process group; a second call does nothing."""
        process, self._process = self._process, None
        keepalive, self._keepalive = self._keepalive, None
        stop_group(process, keepalive, timeout_s)


# ---------------------------------------------------------------- the script


def script_main(
    argv: Sequence[str],
    *,
    ensure: Callable[..., Path],
    error: type[Exception],
    server: Callable[[Path], Any],
    banner: Callable[[Any], str],
    script: str,
) -> int:
    """A harness's command line: ``ensure-venv`` (the default) or ``serve``.

    ``ensure-venv`` builds or finds the venv (``ensure(log=...)``) and prints its path (the
    Makefile builds the venvs this way before pytest runs). ``serve`` starts ``server(venv)``,
    prints ``banner(server)`` and runs until Ctrl-C. An ``error`` raised while building is
    printed, and the status is 1.
    """
    command = argv[0] if argv else "ensure-venv"
    try:
        venv = ensure(log=sys.stderr)
    except error as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if command == "ensure-venv":
        print(venv)
        return 0
    if command == "serve":
        running = server(venv)
        running.start()
        print(banner(running), flush=True)
        try:
            signal.pause()
        except KeyboardInterrupt:
            pass
        finally:
            running.close()
        return 0
    print(f"usage: {script} [ensure-venv|serve]", file=sys.stderr)
    return 2
