"""`ModelEvaluator`: the base of evaluators that call a model (embeddings, LLM judges).

It owns what they share: the connection settings given as keywords (checked at
construction, never a network call there), the async scoring path the pipeline awaits, a
synchronous path for ``evaluate()`` and the CLI, and how a failed call becomes a result:
``status="error"`` with ``error_type`` saying why (``rate_limited``, ``timeout``,
``unparseable``...), never a made-up score.

Example:
    >>> model_settings("llm_judge", "gpt-4o-mini", base_url="http://127.0.0.1:8000/v1", tpm=90_000).tpm
    90000.0
"""

from __future__ import annotations

import os
import time
from typing import Any

from tracesim._errors import ConfigError
from tracesim.evaluators._base import DEFAULT, Evaluator, MeasureValue, _Default
from tracesim.evaluators._model import ModelCallError, ModelSettings, run_sync
from tracesim.evaluators._options import check_int, check_number
from tracesim.evaluators._result import EvalResult

__all__ = ["ModelEvaluator", "Unparseable", "model_settings"]


class Unparseable(Exception):
    """The model answered, but not in a form the evaluator can read; ``raw`` is its answer."""

    def __init__(self, message: str, raw: str | None, details: dict[str, Any]) -> None:
        super().__init__(message)
        self.raw = raw
        self.details = details


def model_settings(
    type_name: str,
    model: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    azure_endpoint: str | None = None,
    api_version: str | None = None,
    request_timeout_s: float = 30.0,
    max_retries: int = 4,
    rpm: float | None = None,
    tpm: float | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> ModelSettings:
    """Checked `ModelSettings` from an evaluator's keywords (``ConfigError`` names the bad one)."""
    for key, value in (("model", model), ("base_url", base_url), ("azure_endpoint", azure_endpoint)):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ConfigError(f"{type_name}.{key}", value, "a non-empty string")
    if azure_endpoint and not api_version:
        raise ConfigError(
            f"{type_name}.api_version", api_version, "the Azure OpenAI API version, e.g. 2024-10-21"
        )
    timeout = check_number(f"{type_name}.request_timeout_s", request_timeout_s, low=0.0, low_open=True)
    retries = check_int(f"{type_name}.max_retries", max_retries, low=0)
    per_minute = [
        check_number(f"{type_name}.{key}", value, low=0.0, low_open=True, allow_none=True)
        for key, value in (("rpm", rpm), ("tpm", tpm))
    ]
    return ModelSettings(
        model=model,
        base_url=base_url,
        api_key=api_key,
        azure_endpoint=azure_endpoint,
        api_version=api_version,
        request_timeout_s=float(timeout or 30.0),
        max_retries=int(retries or 0),
        rpm=per_minute[0],
        tpm=per_minute[1],
        cache_dir=None if cache_dir is None else os.fspath(cache_dir),
    )


class ModelEvaluator(Evaluator):
    """An evaluator whose metric awaits a model: subclasses implement :meth:`ameasure`."""

    async_backend: bool = True

    def __init__(
        self,
        *,
        name: str | None = None,
        threshold: float | _Default | None = DEFAULT,
        sample_rate: float = 1.0,
        timeout_s: float | None = None,
        max_concurrency: int | None = None,
    ) -> None:
        super().__init__(
            name=name,
            threshold=threshold,
            sample_rate=sample_rate,
            timeout_s=timeout_s,
            max_concurrency=max_concurrency,
        )

    @property
    def is_async(self) -> bool:
        """Scored on the pipeline's event loop when the backend is a network call."""
        return self.async_backend

    async def ameasure(self, output: Any, expected: Any, *, input: Any = None) -> MeasureValue:
        """Compute the metric, awaiting the model; raise on bad data."""
        raise NotImplementedError(f"{type(self).__name__} must implement ameasure()")

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> MeasureValue:
        """The synchronous form: runs :meth:`ameasure` on tracesim's model loop and waits."""
        return run_sync(self.ameasure(output, expected, input=input), self.timeout_s)

    async def aevaluate(self, output: Any, expected: Any, *, input: Any = None) -> EvalResult:
        if expected is None and self.requires_expected:
            return self._skipped()
        start = time.perf_counter()
        try:
            value = await self.ameasure(output, expected, input=input)
        except Exception as exc:
            return self._error(exc, time.perf_counter() - start)
        return self._finish(value, time.perf_counter() - start)

    def _error(self, exc: BaseException, duration_s: float) -> EvalResult:
        """A failed model call or an unreadable answer as its own ``error_type``; else the base's."""
        if isinstance(exc, ModelCallError):
            details: dict[str, Any] = {"attempts": exc.attempts}
            if exc.status is not None:
                details["http_status"] = exc.status
            return self._error_result(exc.kind, str(exc), duration_s, details)
        if isinstance(exc, Unparseable):
            details = {**exc.details, "raw": exc.raw}
            return self._error_result("unparseable", str(exc), duration_s, details)
        if isinstance(exc, TimeoutError):
            return self._error_result("timeout", str(exc) or "no answer in time", duration_s, {})
        return super()._error(exc, duration_s)

    def _error_result(
        self, kind: str, message: str, duration_s: float, details: dict[str, Any]
    ) -> EvalResult:
        return EvalResult(
            name=self.name,
            threshold=self.threshold,
            status="error",
            error=f"{kind}: {message}",
            error_type=kind,
            details=details,
            duration_s=duration_s,
        )
