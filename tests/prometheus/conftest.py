"""Fixtures for tests against a real Prometheus server (Debian's ``prometheus`` package).

``start_prometheus(targets=[...], rule_files=[...])`` starts a server (see ``_server.py``) that
the test's teardown stops; ``prometheus_harness`` is that module, for its helpers. A test that
needs the server is skipped, naming the package, only when ``prometheus`` is not on PATH; a
server that is installed but does not start fails the test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from _venv_server import load_by_path  # tests/ is on sys.path (tests/conftest.py)

# By path under a unique name: other test folders have a _server.py of their own.
harness = load_by_path("tracesim_tests_prometheus_server", Path(__file__).with_name("_server.py"))


@pytest.fixture
def prometheus_harness() -> ModuleType:
    """``tests/prometheus/_server.py``, for its helpers (``by_labels``, ``QueryTimeout``)."""
    return harness


@pytest.fixture
def start_prometheus(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """A function starting a Prometheus that scrapes ``targets``; every one is stopped at teardown."""
    if harness.binary() is None:
        pytest.skip(f"needs the prometheus server, not on PATH here (Debian: {harness.INSTALL})")
    servers: list[Any] = []

    def start(*, targets: Sequence[str], rule_files: Sequence[Path] = ()) -> Any:
        server = harness.PrometheusServer(
            tmp_path / f"prometheus-{len(servers)}", targets=targets, rule_files=rule_files
        )
        servers.append(server)
        try:
            server.start()
        except harness.PrometheusUnavailable as exc:
            pytest.fail(f"Prometheus server: {exc}", pytrace=False)
        return server

    try:
        yield start
    finally:
        for server in servers:
            server.stop()
