"""Azure AI Evaluation's ``SimilarityEvaluator`` over tracesim's similarity prompt.

Constructed from Azure's model configurations, called as ``(query=, response=,
ground_truth=)``, it asks the model with tracesim's ``llm_similarity`` prompt and reads the
answer as the azure-ai-evaluation release named by ``result_format`` reads it
(`_azure_reading`): ``"1.18"`` (the default) gives 1.17-1.18's eight keys, ``similarity``
and ``similarity_score`` (a float: the grade, NaN when the answer holds none),
``similarity_passed``, ``similarity_result`` (``pass`` at ``>= threshold``, ``unknown`` for
NaN), ``similarity_reason``, ``similarity_status``, ``similarity_threshold`` and
``similarity_properties``; ``"1.16"`` gives 1.13-1.16's eleven (``similarity``,
``gpt_similarity``, ``similarity_result``, ``similarity_threshold``,
``similarity_prompt_tokens``, ...). Where that release raises on an answer (1.18: not JSON;
1.16: no digit) this raises `EvaluationException`, which is also the Python error Azure
raises there (``json.JSONDecodeError``, ...), with the model's answer in the message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from tracesim.evaluators._judge import LLMSimilarity
from tracesim.evaluators._model_connection import ModelConnection
from tracesim.evaluators._model_evaluator import ModelEvaluator
from tracesim.evaluators._result import EvalResult
from tracesim.evaluators.compat._azure_errors import (
    ErrorBlame,
    ErrorCategory,
    ErrorTarget,
    EvaluationException,
)
from tracesim.evaluators.compat._azure_format import RESULT_FORMATS, ResultFormat, check_result_format
from tracesim.evaluators.compat._azure_reading import Grade, read_1_16, read_1_18

__all__ = ["RESULT_FORMATS", "SimilarityEvaluator"]

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


class _Answer(ModelEvaluator):
    """The judge's prompt and model call, its answer returned unread: Azure's rules read it.

    An ``ok`` result has no score; ``details`` hold the answer's ``content`` and
    ``finish_reason`` and the call's usage. Failed calls and timeouts are error results, as
    for every model-backed evaluator (its ``timeout_s`` is the judge's).
    """

    annotator_kind: ClassVar[str] = "LLM"

    def __init__(self, judge: LLMSimilarity) -> None:
        super().__init__(name="azure_similarity", threshold=None)
        self._judge = judge
        self._caller = judge._caller

    async def ameasure(self, output: Any, expected: Any, *, input: Any = None) -> EvalResult:
        judge = self._judge
        answer, usage, _ = await judge.ask(judge.messages(output, expected, input=input))
        details = {
            "content": answer.get("content"),
            "finish_reason": answer.get("finish_reason"),
            **usage.details(),
        }
        return EvalResult(name=self.name, details=details)


class SimilarityEvaluator:
    """Azure's LLM-judged similarity of a response to the ground truth, 1 to 5, pass at ``threshold``.

    ``model_config`` is shaped like Azure's ``AzureOpenAIModelConfiguration``
    (``azure_endpoint``, ``azure_deployment``, ``api_key``, ``api_version``) or
    ``OpenAIModelConfiguration`` (``base_url``, ``api_key``, ``model``): a dict or an object
    with those attributes. Extra keywords (``credential``, ``is_reasoning_model``) are
    accepted and ignored.

    ``result_format`` picks the Azure release whose dict (and reading of the model's answer)
    to reproduce: ``"1.18"`` (1.17 and 1.18, the default) or ``"1.16"`` (1.13 to 1.16). In
    1.18's ``similarity_properties`` (1.16's ``similarity_prompt_tokens``, ...), the token
    counts and ``finish_reason`` are the judge call's, ``sample_input`` and ``sample_output``
    are written as Azure writes them (the inputs; the model's answer) and ``model`` is the
    configured model (deployment), where Azure reports the model id the server answers with.

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
        result_format: ResultFormat = "1.18",
        **kwargs: Any,
    ) -> None:
        self.result_format = check_result_format("SimilarityEvaluator", result_format, ("1.18", "1.16"))
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
        # Azure takes any threshold (0 and 10 too); it is applied to the answer here, not by the judge.
        self._answer = _Answer(LLMSimilarity(threshold=None, connection=ModelConnection(**options)))

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
        result = self._answer.evaluate(response, ground_truth, input=query)
        if result.status != "ok":
            raise EvaluationException(
                f"SimilarityEvaluator: {result.error}",
                target=ErrorTarget.SIMILARITY_EVALUATOR,
                category=ErrorCategory.FAILED_EXECUTION,
                blame=ErrorBlame.SYSTEM_ERROR,
            )
        usage = result.details.get("usage") or {}
        grade = Grade(
            answer=result.details.get("content"),
            finish_reason=result.details.get("finish_reason") or "",
            tokens=(
                _count(usage.get("prompt_tokens")),
                _count(usage.get("completion_tokens")),
                _count(usage.get("total_tokens")),
            ),
            model=self.model,
            inputs={"query": query, "response": response, "ground_truth": ground_truth},
        )
        if self.result_format == "1.16":
            return read_1_16(grade, self.threshold)
        return read_1_18(grade, self.threshold)


def _count(value: Any) -> int:
    """A token count as Azure reports it: the int, or 0 when the server gave none."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
