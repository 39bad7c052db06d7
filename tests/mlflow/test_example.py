"""examples/mlflow/agent.py, run as its docstring says, against a real MLflow."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mlflow" / "agent.py"


def test_the_mlflow_example_shows_its_scores_as_assessments(
    mlflow_server: Any, experiment: str, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACESIM_", "OTEL_"))}
    env.update(OTEL_EXPORTER_OTLP_ENDPOINT=mlflow_server.url, MLFLOW_EXPERIMENT_ID=experiment)
    result = subprocess.run(
        [sys.executable, str(EXAMPLE)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    traces = dict(line.split(" ", 1)[::-1] for line in result.stdout.splitlines())
    assert set(traces) == {"Where was Marie Curie born?", "What did Alan Turing propose in 1950?"}
    found = mlflow_server.read_assessments(list(traces.values()))

    curie = {a["assessment_name"]: a for a in found[traces["Where was Marie Curie born?"]]}
    assert set(curie) == {"levenshtein", "rouge", "expected_response", "user_rating"}
    assert curie["levenshtein"]["feedback"]["value"] == pytest.approx(0.79)
    assert curie["levenshtein"]["metadata"]["tracesim.passed"] == "false"
    assert curie["expected_response"]["expectation"]["value"] == "Marie Curie was born in Warsaw."
    assert curie["user_rating"]["source"]["source_type"] == "HUMAN"
    turing = {a["assessment_name"] for a in found[traces["What did Alan Turing propose in 1950?"]]}
    assert turing == {"levenshtein", "rouge", "expected_response"}
