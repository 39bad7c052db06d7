"""Azure AI Evaluation's ``SimilarityEvaluator`` over tracesim's ``llm_similarity`` judge."""

from __future__ import annotations

from typing import Any

__all__ = ["SimilarityEvaluator"]


class SimilarityEvaluator:
    """Azure's LLM-judged similarity (1–5): planned, not available in this version.

    It needs tracesim's ``llm_similarity`` evaluator, which calls a model and is not part
    of this release; constructing it raises ``NotImplementedError`` rather than returning
    made-up numbers.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(
            "compat.azure.SimilarityEvaluator needs the 'llm_similarity' evaluator, which is planned "
            "but not available in this version of tracesim"
        )
