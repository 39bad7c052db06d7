"""Azure AI Evaluation's ``SimilarityEvaluator`` over tracesim's ``llm_similarity`` judge.

Constructed from Azure's model configurations, called as ``(query=, response=,
ground_truth=)``, it returns the dict of azure-ai-evaluation 1.17-1.18 (``result_format="1.18"``,
the default), exactly its eight keys: ``similarity`` and ``similarity_score`` (the grade 1-5 as
a float), ``similarity_passed`` (bool), ``similarity_result`` (``pass`` at ``>= threshold``),
``similarity_reason``, ``similarity_status`` (``completed``), ``similarity_threshold`` and
``similarity_properties`` (token counts and model). ``result_format="1.16"`` gives 1.13-1.16's
eleven keys instead (``similarity``, ``gpt_similarity``, ``similarity_result``,
``similarity_threshold``, ``similarity_prompt_tokens``, ...; no reason). Where Azure would
return NaN for an answer it cannot read, this raises `EvaluationException` with the model's
answer in the message: no made-up number.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from tracesim.evaluators._judge import LLMSimilarity
from tracesim.evaluators.compat._azure_errors import (
    ErrorBlame,
    ErrorCategory,
    ErrorTarget,
    EvaluationException,
)

__all__ = ["RESULT_FORMATS", "SimilarityEvaluator"]

RESULT_FORMATS = ("1.18", "1.16")
"""The azure-ai-evaluation output shapes ``SimilarityEvaluator(result_format=...)`` reproduces."""

_AZURE_KEYS = ("azure_endpoint", "azure_deployment", "api_key", "api_version")
_OPENAI_KEYS = ("base_url", "api_key", "model")
_DEFAULT_API_VERSION = "2024-10-21"
_TOKEN_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")


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

    ``result_format`` picks the output of an Azure version: ``"1.18"`` (1.17 and 1.18, the
    default) or ``"1.16"`` (1.13 to 1.16). In 1.18's ``similarity_properties``,
    ``prompt_tokens``, ``completion_tokens`` and ``total_tokens`` are the judge call's and
    ``model`` the configured model (deployment); ``finish_reason``, ``sample_input`` and
    ``sample_output`` are ``""``, Azure's value when it has none, as tracesim's judge sends
    its own prompt, not Azure's (1.16's ``similarity_finish_reason``, ... likewise).

    Example:
        >>> config = {"base_url": "http://127.0.0.1:9/v1", "api_key": "k", "model": "gpt-4o-mini"}
        >>> SimilarityEvaluator(config, threshold=4).threshold
        4
        >>> SimilarityEvaluator(config, result_format="1.16").result_format
        '1.16'
    """

    id = "azureai://built-in/evaluators/similarity"

    def __init__(
        self,
        model_config: Any,
        *,
        threshold: int = 3,
        result_format: Literal["1.18", "1.16"] = "1.18",
        **kwargs: Any,
    ) -> None:
        if result_format not in RESULT_FORMATS:
            raise ValueError(
                f"SimilarityEvaluator result_format must be one of {', '.join(map(repr, RESULT_FORMATS))} "
                f"(the azure-ai-evaluation version whose keys to return); got {result_format!r}"
            )
        self.result_format = result_format
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
        usage = result.details.get("usage") or {}
        tokens = tuple(_count(usage.get(key)) for key in _TOKEN_KEYS)
        score = float(result.score)  # Azure: float(score), so a grade 4 is 4.0
        verdict = "pass" if score >= self.threshold else "fail"
        if self.result_format == "1.16":
            return {
                "similarity": score,
                "gpt_similarity": score,
                "similarity_result": verdict,
                "similarity_threshold": self.threshold,
                "similarity_prompt_tokens": tokens[0],
                "similarity_completion_tokens": tokens[1],
                "similarity_total_tokens": tokens[2],
                "similarity_finish_reason": "",
                "similarity_model": self.model,
                "similarity_sample_input": "",
                "similarity_sample_output": "",
            }
        properties = {
            "prompt_tokens": tokens[0],
            "completion_tokens": tokens[1],
            "total_tokens": tokens[2],
            "finish_reason": "",
            "model": self.model,
            "sample_input": "",
            "sample_output": "",
        }
        return {
            "similarity": score,
            "similarity_score": score,
            "similarity_passed": verdict == "pass",
            "similarity_result": verdict,
            "similarity_reason": result.explanation or "",
            "similarity_status": "completed",
            "similarity_threshold": self.threshold,
            "similarity_properties": properties,
        }


def _count(value: Any) -> int:
    """A token count as Azure reports it: the int, or 0 when the server gave none."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
