"""Fixtures for tests against a real Arize Phoenix server.

``phoenix`` (one server per session, started on first use) gives tests:

* ``phoenix.http_endpoint`` / ``phoenix.traces_url`` / ``phoenix.grpc_endpoint``
* ``phoenix.spans(project, min_count=..., timeout_s=...)`` to read spans back; it fails the
  test (``ReadBackTimeout``: "timed out after N s with M of K spans") rather than return fewer
  than ``min_count``, so a slow server is never taken for lost data
* ``phoenix.span_annotations(project, span_ids, ...)``, the same way
* ``phoenix.stop()``, ``phoenix.start()``, ``phoenix.restart()`` (same ports and data)

Route each test to its own Phoenix project with the resource attribute
``openinference.project.name`` (``project`` fixture gives a unique name).

``TRACESIM_SKIP_PHOENIX=1`` skips every test here, whether or not Phoenix is installed, and
nothing is built or started. Otherwise, if Phoenix cannot be installed or started, the tests
that need it fail with the reason.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest
from _venv_server import load_by_path  # tests/ is on sys.path (tests/conftest.py)

# By path under a unique name: other test folders have a _server.py of their own.
harness = load_by_path("tracesim_tests_phoenix_server", Path(__file__).with_name("_server.py"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    # Read at collection, before the autouse fixture clears TRACESIM_* for each test.
    skip = os.environ.get(harness.SKIP_ENV) == "1"
    for item in items:
        if here in Path(item.path).parents:
            item.add_marker(pytest.mark.phoenix)
            if skip:
                item.add_marker(pytest.mark.skip(reason=f"{harness.SKIP_ENV}=1: Phoenix tests are skipped"))


@pytest.fixture(scope="session")
def phoenix_venv() -> Path:
    """Phoenix's virtualenv, built on first use and cached across runs."""
    try:
        venv: Path = harness.ensure_venv(log=sys.stderr)
        return venv
    except harness.PhoenixUnavailable as exc:
        problem = f"Phoenix virtualenv: {exc}"
    _unavailable(problem)  # outside the except block: the report shows the reason, not a chain


@pytest.fixture(scope="session")
def phoenix_server(phoenix_venv: Path) -> Iterator[object]:
    """The session's Phoenix server (see the module docstring for its API)."""
    server = harness.PhoenixServer(phoenix_venv)
    try:
        server.start()
    except harness.PhoenixUnavailable as exc:
        server.close()
        problem = f"Phoenix server: {exc}"
    else:
        try:
            yield server
        finally:
            server.close()
        return
    _unavailable(problem)


def _unavailable(reason: str) -> NoReturn:
    pytest.fail(f"{reason}\n(set {harness.SKIP_ENV}=1 to skip the Phoenix tests)", pytrace=False)


@pytest.fixture
def phoenix(phoenix_server: object) -> object:
    """The session's Phoenix, running (a test that stopped it may leave it stopped)."""
    phoenix_server.start()  # type: ignore[attr-defined]
    return phoenix_server


@pytest.fixture
def project(request: pytest.FixtureRequest) -> str:
    """A Phoenix project name unique to this test."""
    return f"{request.node.name[:40]}-{uuid.uuid4().hex[:8]}".replace("[", "-").replace("]", "")
