"""Evaluation results as MLflow assessments (feedback and expectations), sent in the background."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracesim._config import Settings
    from tracesim.exporters import Redaction

__all__ = ["mlflow_sinks"]


def mlflow_sinks(settings: Settings, redaction: Redaction) -> list[Any]:
    """The result sinks that send to MLflow for ``settings``: none yet."""
    return []
