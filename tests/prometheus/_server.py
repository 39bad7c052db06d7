"""A real Prometheus server for the tests: Debian's ``prometheus`` package, started per test.

``PrometheusServer(workdir, targets=[...], rule_files=[...])`` writes its own configuration
(every target scraped each second, rules evaluated each second, job ``tracesim``), keeps its
data under ``workdir`` (``--storage.tsdb.path``), listens on a free loopback port and runs under
``tests/phoenix/_supervisor.py``, so it ends with the test process even when that is killed.
``start()`` returns once ``/-/ready`` answers 200; ``query(expr)`` polls ``/api/v1/query``
until the answer satisfies a condition (by default: not empty) or a deadline passes; ``stop()``
sends SIGTERM, then SIGKILL after a grace period.

Measured here (prometheus 2.42.0+ds, 2 cores): ``/-/ready`` 0.2 s after the start; a target's
first samples are queryable 5 to 6 s after that (the scrape manager takes its targets from
discovery 5 s after start, then scrapes at an offset within the interval); a rule over them a
further 1 to 2 s; SIGTERM stops it in under 0.1 s.

Never use the machine's own ``/etc/prometheus/prometheus.yml`` (Debian's scrapes
localhost:9090 and :9100): the server always gets the configuration written here.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

# The shared harness parts, in tests/: on sys.path under pytest, added here for a script run.
if str(Path(__file__).resolve().parents[1]) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _venv_server

INSTALL = "apt-get install -y --no-install-recommends prometheus"
JOB = "tracesim"
_STOP_GRACE_S = 20.0
_POLL_S = 0.2  # between polls of the server, each bounded by a deadline

Result = list[dict[str, Any]]


class PrometheusUnavailable(RuntimeError):
    """The server could not start; the message holds the tail of its log."""


class QueryTimeout(AssertionError):
    """A query did not give the awaited answer in time; the message shows the last answer."""


def binary() -> str | None:
    """The ``prometheus`` executable on PATH, or None."""
    return shutil.which("prometheus")


free_port = _venv_server.free_port


def config_text(targets: Sequence[str], rule_files: Sequence[Path], interval_s: float = 1.0) -> str:
    """The server's ``prometheus.yml``: JSON, which is YAML too.

    Example:
        >>> print(config_text(["127.0.0.1:9464"], [Path("/r/rules.yml")]))  # doctest: +NORMALIZE_WHITESPACE
        {"global": {"scrape_interval": "1000ms", "scrape_timeout": "1000ms", "evaluation_interval": "1000ms"},
         "rule_files": ["/r/rules.yml"],
         "scrape_configs": [{"job_name": "tracesim", "static_configs": [{"targets": ["127.0.0.1:9464"]}]}]}
    """
    every = f"{round(interval_s * 1000)}ms"
    document = {
        "global": {"scrape_interval": every, "scrape_timeout": every, "evaluation_interval": every},
        "rule_files": [str(p) for p in rule_files],
        "scrape_configs": [{"job_name": JOB, "static_configs": [{"targets": list(targets)}]}],
    }
    return json.dumps(document)


class PrometheusServer(_venv_server.SupervisedServer):
    """One ``prometheus`` process scraping ``targets``, with ``rule_files`` loaded.

    Example:
        >>> server = PrometheusServer(tmp_path, targets=["127.0.0.1:9464"])  # doctest: +SKIP
        >>> server.start()  # doctest: +SKIP
        >>> server.query('up{job="tracesim"} == 1')  # doctest: +SKIP
        [{'metric': {'__name__': 'up', 'instance': '127.0.0.1:9464', 'job': 'tracesim'}, 'value': [...]}]
        >>> server.stop()  # doctest: +SKIP
    """

    def __init__(
        self,
        workdir: Path,
        *,
        targets: Sequence[str],
        rule_files: Sequence[Path] = (),
        interval_s: float = 1.0,
        start_timeout_s: float = 60.0,
    ) -> None:
        super().__init__()
        self.workdir = workdir
        self.targets = tuple(targets)
        self.rule_files = tuple(Path(p).resolve() for p in rule_files)
        self.interval_s = interval_s
        self.start_timeout_s = start_timeout_s
        self.config_path = workdir / "prometheus.yml"
        self.data_dir = workdir / "data"
        self.log_path = workdir / "prometheus.log"
        self.port = 0
        self.ready_after_s: float | None = None
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Start the server and wait for ``/-/ready``; a port taken meanwhile is retried on another."""
        exe = binary()
        if exe is None:
            raise PrometheusUnavailable(f"prometheus is not on PATH (Debian: {INSTALL})")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(config_text(self.targets, self.rule_files, self.interval_s))
        for _attempt in range(3):
            self.port = free_port()
            started = time.monotonic()
            self._spawn(exe)
            if self._wait_ready(started):
                self.ready_after_s = time.monotonic() - started
                return
            self.stop()
            if "address already in use" not in self._log_tail():
                break
        raise PrometheusUnavailable(f"prometheus did not become ready\n{self._log_tail()}")

    def _spawn(self, exe: str) -> None:
        command = [
            exe,
            f"--config.file={self.config_path}",
            f"--storage.tsdb.path={self.data_dir}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--log.level=info",
        ]
        with open(self.log_path, "ab") as log:
            log.write(f"\n=== {' '.join(command)}\n".encode())
            log.flush()
            self._process, self._keepalive = _venv_server.supervisor().spawn(
                command, grace_s=_STOP_GRACE_S, stdout=log, env=dict(os.environ)
            )

    def _wait_ready(self, started: float) -> bool:
        assert self._process is not None
        while time.monotonic() < started + self.start_timeout_s:
            if self._process.poll() is not None:
                return False
            with (
                contextlib.suppress(OSError),
                self._opener.open(f"{self.url}/-/ready", timeout=2.0) as answer,
            ):
                if answer.status == 200:
                    return True
            time.sleep(_POLL_S)
        return False

    def stop(self, timeout_s: float = _STOP_GRACE_S) -> None:
        """SIGTERM to the server's process group; SIGKILL what is left after ``timeout_s``."""
        self._stop_group(timeout_s)

    def _log_tail(self, lines: int = 20) -> str:
        return _venv_server.tail(self.log_path, lines)

    # ------------------------------------------------------------ the HTTP API

    def api(self, path: str, **params: str) -> Any:
        """``GET /api/v1/<path>``'s ``data``; an answer whose status is not success raises."""
        url = f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        try:
            with self._opener.open(url, timeout=10.0) as response:
                body = json.load(response)
        except urllib.error.HTTPError as exc:  # 400 for a bad expression: say what it was
            body = json.load(exc)
        if body.get("status") != "success":
            raise AssertionError(f"GET {url}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query_once(self, expr: str) -> Result:
        """The instant vector ``expr`` gives now (``/api/v1/query``)."""
        data = self.api("query", query=expr)
        assert data["resultType"] == "vector", f"{expr!r} gives a {data['resultType']}, not a vector"
        result: Result = data["result"]
        return result

    def query(self, expr: str, *, until: Callable[[Result], bool] = bool, timeout_s: float = 60.0) -> Result:
        """Poll ``expr`` until ``until(result)`` holds (by default: a result at all).

        Raises:
            QueryTimeout: not within ``timeout_s``; the message shows the last result.
        """
        started = time.monotonic()
        while True:
            result = self.query_once(expr)
            if until(result):
                return result
            waited = time.monotonic() - started
            if waited >= timeout_s:
                raise QueryTimeout(f"{expr!r}: not as awaited after {waited:.0f} s; last answer {result}")
            time.sleep(_POLL_S)

    def target_health(self) -> list[dict[str, Any]]:
        """The active targets with their ``health`` and ``lastError`` (``/api/v1/targets``)."""
        targets: list[dict[str, Any]] = self.api("targets", state="active")["activeTargets"]
        return targets


def by_labels(result: Result, *names: str) -> dict[tuple[str, ...], float]:
    """A query result as ``{(label values...): value}``.

    Example:
        >>> by_labels([{"metric": {"e": "rouge"}, "value": [1.0, "0.5"]}], "e")
        {('rouge',): 0.5}
    """
    return {tuple(r["metric"].get(n, "") for n in names): float(r["value"][1]) for r in result}
