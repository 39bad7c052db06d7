"""Run a server so that it cannot outlive the test process that started it.

``spawn(command, ...)`` (test side) starts ``python _supervisor.py FD GRACE_S -- COMMAND...``
as the leader of a new process group and keeps the write end of a pipe whose read end is
``FD``. When the test process ends in any way, SIGKILL included, the kernel closes its end,
the supervisor's read returns end-of-file, and it stops the command: SIGTERM to the process
group, SIGKILL to what is left after ``GRACE_S`` seconds. ``release(fd)`` closes the pipe on
purpose (after a normal stop).

The command runs in the supervisor's group, so ``os.killpg(supervisor_pid, ...)`` reaches all
of it. A SIGTERM sent to the group is meant for the command: the supervisor outlives it and
exits with the command's status, so whoever waits for the supervisor knows the command has
finished (Phoenix drains its ingestion queue on SIGTERM; a restart on the same ports must not
begin before that). ``prctl(PR_SET_PDEATHSIG)`` was the alternative; it fires when the parent
*thread* ends, not the process, and reaches one process, not the group.

Only the standard library is used: any Python 3 can run the supervisor side.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from typing import IO

__all__ = ["release", "spawn"]

# ---------------------------------------------------------------- test side

# Our ends of the supervisors' pipes. A child forked from the test process (without exec)
# closes its copies, or the pipe would stay open, and the server alive, as long as that child.
_KEEPALIVE_FDS: set[int] = set()


def _close_keepalives_in_child() -> None:
    for fd in _KEEPALIVE_FDS:
        with contextlib.suppress(OSError):
            os.close(fd)
    _KEEPALIVE_FDS.clear()


os.register_at_fork(after_in_child=_close_keepalives_in_child)


def spawn(
    command: list[str], *, grace_s: float, stdout: IO[bytes], env: dict[str, str]
) -> tuple[subprocess.Popen[bytes], int]:
    """Start ``command`` supervised, in a new process group; return the supervisor and our pipe end.

    Example:
        >>> process, keepalive = spawn(["sleep", "60"], grace_s=5, stdout=log, env=env)  # doctest: +SKIP
        >>> os.killpg(process.pid, signal.SIGTERM); process.wait(); release(keepalive)  # doctest: +SKIP
    """
    read_end, write_end = os.pipe()  # O_CLOEXEC: no other child inherits our end
    try:
        process = subprocess.Popen(
            [sys.executable, __file__, str(read_end), str(grace_s), "--", *command],
            stdout=stdout,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            pass_fds=(read_end,),
            start_new_session=True,  # signalled as one group; a Ctrl-C reaches pytest only
        )
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    _KEEPALIVE_FDS.add(write_end)
    return process, write_end


def release(keepalive: int) -> None:
    """Close our end of the pipe: the supervisor (if still running) stops its command."""
    _KEEPALIVE_FDS.discard(keepalive)
    with contextlib.suppress(OSError):
        os.close(keepalive)


# ---------------------------------------------------------------- supervisor side


def _watch(fd: int, grace_s: float, orphaned: threading.Event, finished: threading.Event) -> None:
    """Block until the starter's end of the pipe closes, then end the process group."""
    while os.read(fd, 4096):
        pass  # the starter never writes; anything read is ignored
    orphaned.set()
    group = os.getpgrp()
    os.killpg(group, signal.SIGTERM)  # our own handler ignores it; the command stops
    if not finished.wait(grace_s):
        os.killpg(group, signal.SIGKILL)  # the command and this supervisor


def main(argv: list[str]) -> int:
    """Supervise ``argv[3:]``; see the module docstring for the arguments."""
    if len(argv) < 4 or argv[2] != "--":
        print("usage: _supervisor.py FD GRACE_S -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    fd, grace_s, command = int(argv[0]), float(argv[1]), argv[3:]
    # Survive the group's SIGTERM to report the command's exit. A handler (unlike SIG_IGN)
    # is reset by exec, so the command still gets the default action.
    signal.signal(signal.SIGTERM, lambda signum, frame: None)
    child = subprocess.Popen(command)  # same process group as this supervisor
    orphaned, finished = threading.Event(), threading.Event()
    threading.Thread(target=_watch, args=(fd, grace_s, orphaned, finished), daemon=True).start()
    status = child.wait()
    finished.set()
    if orphaned.is_set():
        # Nobody waits for us: take any worker the command left behind down with us.
        os.killpg(os.getpgrp(), signal.SIGKILL)
    return 128 - status if status < 0 else status  # a signal, as a shell reports it


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
