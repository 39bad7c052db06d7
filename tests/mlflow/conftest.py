"""Fixtures for tests against a real MLflow tracking server.

``mlflow_server`` (one server per session, started on first use) gives tests:

* ``mlflow_server.url`` (UI, REST, OTLP at ``/v1/traces``) and ``mlflow_server.traces_url``
* ``mlflow_server.read_assessments(["tr-..."])``: each trace's assessments as MLflow's own
  client reads them (``mlflow.get_trace(...).info.assessments``), run in MLflow's venv
* ``experiment``: a new experiment per test (its id, for ``mlflow_experiment_id``), so tests
  never see each other's traces

``TRACESIM_SKIP_MLFLOW=1`` skips every test here, and nothing is built or started. Otherwise,
when MLflow's venv cannot be built (no package registry) or the server does not start, the
tests skip with the reason, naming what is missing.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _venv_server import load_by_path  # tests/ is on sys.path (tests/conftest.py)

# By path under a unique name: other test folders have a _server.py of their own.
harness = load_by_path("tracesim_tests_mlflow_server", Path(__file__).with_name("_server.py"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    skip = os.environ.get(harness.SKIP_ENV) == "1"  # read before the autouse fixture clears TRACESIM_*
    for item in items:
        if here in Path(item.path).parents and skip:
            item.add_marker(pytest.mark.skip(reason=f"{harness.SKIP_ENV}=1: MLflow tests are skipped"))


@pytest.fixture(scope="session")
def mlflow_server() -> Iterator[Any]:
    """The session's MLflow server."""
    try:
        venv = harness.ensure_venv(log=sys.stderr)
    except harness.MlflowUnavailable as exc:
        pytest.skip(f"MLflow's virtualenv ({', '.join(harness.REQUIREMENTS)}) is missing: {exc}")
    server = harness.MlflowServer(venv)
    try:
        server.start()
    except harness.MlflowUnavailable as exc:
        server.close()
        pytest.skip(f"mlflow server did not start: {exc}")
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def experiment(mlflow_server: Any, request: pytest.FixtureRequest) -> str:
    """A new MLflow experiment for this test; its id."""
    name = f"{request.node.name[:60]}-{uuid.uuid4().hex[:8]}"
    response = httpx.post(
        f"{mlflow_server.url}/api/2.0/mlflow/experiments/create", json={"name": name}, timeout=30.0
    )
    response.raise_for_status()
    experiment_id: str = response.json()["experiment_id"]
    return experiment_id
