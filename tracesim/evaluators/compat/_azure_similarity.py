"""Azure AI Evaluation's ``SimilarityEvaluator`` over tracesim's ``llm_similarity`` judge.

Constructed from Azure's model configurations, called as ``(query=, response=,
ground_truth=)``, it returns Azure's keys: ``similarity`` and its legacy twin
``gpt_similarity`` (an integer grade 1-5, as a float), ``similarity_result``
(``pass`` at ``>= threshold``), ``similarity_threshold``, and the newer ``similarity_reason``,
token counts and model. Where Azure would return NaN for an answer it cannot read, this raises
`EvaluationException` with the model's answer in the message: no made-up number.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracesim.evaluators._judge import LLMSimilarity
from tracesim.evaluators.compat._azure_errors import (
    ErrorBlame,
    ErrorCategory,
    ErrorTarget,
    EvaluationException,
)

__all__ = ["SimilarityEvaluator"]

_AZURE_KEYS = ("azure_endpoint", "azure_deployment", "api_key", "api_version")
_OPENAI_KEYS = ("base_url", "api_key", "model")
_DEFAULT_API_VERSION = "2024-10-21"


def _config(model_config: Any) -> dict[str, Any]:
    if isinstance(model_config, Mapping):
        return {str(k): v for k, v in model_config.items() if v is not None}
    keys = (*_AZURE_KEYS, *_OPENAI_KEYS, "type")
    return {k: getattr(model_config, k) for k in keys if getattr(model_config, k, None) is not None}


def _user_error(message: str) -> EvaluationException:
    return EvaluationException(
        message,
        target=ErrorTarget.SIMILARITY_EVALUATOR,
        category=ErrorCategory.MISSING_FIELD if "required" in message else ErrorCategory.INVALID_VALUE,
        blame=ErrorBlame.USER_ERROR,
    )


class SimilarityEvaluator:
    """Azure's LLM-judged similarity of a response to the ground truth, 1 to 5, pass at ``threshold``.

    ``model_config`` is shaped like Azure's ``AzureOpenAIModelConfiguration``
    (``azure_endpoint``, ``azure_deployment``, ``api_key``, ``api_version``) or
    ``OpenAIModelConfiguration`` (``base_url``, ``api_key``, ``model``): a dict or an object
    with those attributes. Extra keywords (``credential``, ``is_reasoning_model``) are
    accepted and ignored.

    Example:
        >>> config = {"base_url": "http://127.0.0.1:9/v1", "api_key": "k", "model": "gpt-4o-mini"}
        >>> SimilarityEvaluator(config, threshold=4).threshold
        4
    """

    id = "azureai://built-in/evaluators/similarity"

    def __init__(self, model_config: Any, *, threshold: int = 3, **kwargs: Any) -> None:
        config = _config(model_config)
        self.threshold = threshold
        if config.get("azure_endpoint"):
            if not config.get("azure_deployment"):
                raise _user_error("model_config: azure_deployment is required with azure_endpoint")
            options: dict[str, Any] = {
                "azure_endpoint": config["azure_endpoint"],
                "model": config["azure_deployment"],
                "api_key": config.get("api_key"),
                "api_version": config.get("api_version") or _DEFAULT_API_VERSION,
            }
        elif config.get("model"):
            options = {
                "base_url": config.get("base_url"),
                "api_key": config.get("api_key"),
                "model": config["model"],
            }
        else:
            raise _user_error(
                "model_config needs azure_endpoint and azure_deployment (Azure OpenAI) "
                "or model (and base_url, api_key) for an OpenAI-compatible server"
            )
        self.model = options["model"]
        self._judge = LLMSimilarity(threshold=float(threshold), **options)

    def __call__(
        self,
        *,
        query: str | None = None,
        response: str | None = None,
        ground_truth: str | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        if query is None or response is None or ground_truth is None:
            raise _user_error("SimilarityEvaluator: query, response and ground_truth are all required")
        result = self._judge.evaluate(response, ground_truth, input=query)
        if result.status != "ok" or result.score is None:
            raw = result.details.get("raw")
            shown = f"; the model answered {raw!r}" if raw is not None else ""
            raise EvaluationException(
                f"SimilarityEvaluator: {result.error}{shown}",
                target=ErrorTarget.SIMILARITY_EVALUATOR,
                category=ErrorCategory.FAILED_EXECUTION,
                blame=ErrorBlame.SYSTEM_ERROR,
            )
        usage = result.details.get("usage", {})
        score = result.score
        return {
            "similarity": score,
            "gpt_similarity": score,
            "similarity_result": "pass" if score >= self.threshold else "fail",
            "similarity_threshold": self.threshold,
            "similarity_reason": result.explanation or "",
            "similarity_prompt_tokens": usage.get("prompt_tokens", 0),
            "similarity_completion_tokens": usage.get("completion_tokens", 0),
            "similarity_total_tokens": usage.get("total_tokens", 0),
            "similarity_model": self.model,
        }
