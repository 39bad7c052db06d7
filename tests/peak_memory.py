"""Peak memory of a child process, measured without the memory of the test process itself.

Linux carries a process's high-water mark of resident memory into its children: through fork
and exec, a child's ``ru_maxrss`` starts at what its parent held (with ``vfork``, at the most
the parent ever held). A pytest-xdist worker that has run a few hundred tests holds 600 MB or
more, so a child it starts directly reports 600 MB before doing anything, and a bound of
400 MB fails for a reason that is not the child's. `launched` starts the child through a small
Python launcher instead: the launcher holds about 10 MB when it forks, so the child's peak is
its own plus that, and the launcher reports the child's status and peak (``os.wait4``).

Example:
    >>> import subprocess, sys, tempfile, pathlib
    >>> report = pathlib.Path(tempfile.mkdtemp()) / "peak.json"
    >>> _ = subprocess.run(launched([sys.executable, "-c", "x = bytearray(50 << 20)"], report), check=True)
    >>> status, peak_mb = read_report(report)
    >>> status, 50 < peak_mb < 200
    (0, True)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CAP", "LAUNCHER", "Run", "capped", "launched", "read_report"]

CAP = 1 << 30
"""The data segment a child run by `capped` may use: 1 GiB."""

LAUNCHER = """
import json, os, resource, sys
report, cap, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
pid = os.fork()
if pid == 0:
    try:
        if cap:
            resource.setrlimit(resource.RLIMIT_DATA, (cap, cap))
        os.execv(argv[0], argv)
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
code = os.waitstatus_to_exitcode(status)
if report:
    with open(report, "w") as handle:
        json.dump({"status": code, "peak_kb": usage.ru_maxrss}, handle)
sys.exit(code if code >= 0 else 128 - code)
"""


def launched(argv: list[str], report: Path | None = None, cap_bytes: int = 0) -> list[str]:
    """The command that runs ``argv`` through the launcher, its data segment capped at
    ``cap_bytes`` (0: no cap), writing its status and peak to ``report`` (None: nowhere)."""
    return [sys.executable, "-c", LAUNCHER, str(report or ""), str(cap_bytes), *argv]


def read_report(report: Path) -> tuple[int, float]:
    """The child's exit status and peak resident memory in MB, as the launcher wrote them."""
    data = json.loads(report.read_text(encoding="utf-8"))
    return int(data["status"]), data["peak_kb"] / 1024


@dataclass
class Run:
    """What a `capped` child did."""

    status: int
    out: str
    err: str
    peak_mb: float
    seconds: float  # reported, never asserted: the machine is shared


def capped(argv: list[str], *, cwd: Path, timeout: float = 300) -> Run:
    """``argv`` in ``cwd`` through the launcher, its data segment capped at `CAP`, with an
    environment free of tracesim's and OpenTelemetry's settings and ``cwd`` on its path; killed
    (with anything it started) after ``timeout`` seconds, so a hang fails the test, not the run."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACESIM_", "OTEL_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(cwd), env.get("PYTHONPATH")]))
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    out, err, report = cwd / ".out", cwd / ".err", cwd / ".peak.json"
    report.unlink(missing_ok=True)
    with out.open("w") as stdout, err.open("w") as stderr:
        child = subprocess.Popen(
            launched(argv, report, CAP),
            cwd=cwd,
            env=env,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
        began = time.monotonic()
        try:
            child.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    took = time.monotonic() - began
    status, peak_mb = read_report(report) if report.exists() else (child.returncode, 0.0)
    return Run(status, out.read_text(), err.read_text(), peak_mb, took)
