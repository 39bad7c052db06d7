"""`ModelEvaluator`: the base of evaluators that call a model (embeddings, LLM judges).

It owns what they share: the connection settings (a `ModelConnection`, checked at
construction, never a network call there), the async scoring path the pipeline awaits, a
synchronous path for ``evaluate()`` and the CLI, and how a failed call becomes a result:
``status="error"`` with ``error_type`` saying why (``rate_limited``, ``timeout``,
``unparseable``...), never a made-up score.

Time limits: ``request_timeout_s`` bounds each request as a whole (connect, headers, body);
``timeout_s`` bounds the whole evaluation (retries, their waits and rate-limit waits
included) and defaults to twice ``request_timeout_s`` plus 10 s, so a model-backed evaluator
always gives up; ``max_response_bytes`` caps each response body.

Example:
    >>> model_settings("llm_judge", "gpt-4o-mini", base_url="http://127.0.0.1:8000/v1", tpm=90_000).tpm
    90000.0
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import time
from typing import Any

from tracesim.evaluators._base import DEFAULT, Evaluator, MeasureValue, _Default
from tracesim.evaluators._model import (
    ModelCaller,
    ModelCallError,
    ModelSettings,
    evaluation_deadline,
    run_sync,
)
from tracesim.evaluators._model_connection import connection_for
from tracesim.evaluators._result import EvalResult

__all__ = ["ModelEvaluator", "Unparseable", "default_timeout_s", "describe_timeout", "model_settings"]


def default_timeout_s(request_timeout_s: float) -> float:
    """The ``timeout_s`` of a model-backed evaluator that sets none: time for one retry of a
    request that used all of its ``request_timeout_s``, plus 10 s for backoff and rate limits.

    Example:
        >>> default_timeout_s(60.0), default_timeout_s(5.0)
        (130.0, 20.0)
    """
    return 2.0 * request_timeout_s + 10.0


def describe_timeout(evaluator: Evaluator, applied_s: float | None = None) -> str:
    """Why an evaluation gave no result in time, naming the limit that applied.

    ``applied_s`` is the limit the caller used when the evaluator has no ``timeout_s`` (the
    scoring pipeline's own).

    Example:
        >>> from tracesim.evaluators import ExactMatch
        >>> describe_timeout(ExactMatch(timeout_s=2))
        'no result within timeout_s=2 s'
        >>> describe_timeout(ExactMatch(), 30.0)
        "no result within 30 s (the scoring pipeline's limit without timeout_s)"
    """
    if isinstance(evaluator, ModelEvaluator) and evaluator.timeout_s is not None:
        return f"no result within {evaluator.timeout_limit()}"
    if evaluator.timeout_s is not None:
        return f"no result within timeout_s={evaluator.timeout_s:g} s"
    if applied_s is not None:
        return f"no result within {applied_s:g} s (the scoring pipeline's limit without timeout_s)"
    return "no result in time"


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
    max_response_bytes: int | None = None,
) -> ModelSettings:
    """Checked `ModelSettings` from an evaluator's keywords (``ConfigError`` names the bad one).

    The rules are `ModelConnection`'s: this builds one from the keywords.
    """
    flat = {
        "model": model,
        "base_url": base_url,
        "api_key": api_key,
        "azure_endpoint": azure_endpoint,
        "api_version": api_version,
        "request_timeout_s": request_timeout_s,
        "max_retries": max_retries,
        "rpm": rpm,
        "tpm": tpm,
        "cache_dir": cache_dir,
        "max_response_bytes": max_response_bytes,
    }
    connection = connection_for(type_name, None, flat, default_model=model, default_timeout_s=30.0)
    return connection._settings()


class ModelEvaluator(Evaluator):
    """An evaluator whose metric awaits a model: subclasses implement :meth:`ameasure`.

    A subclass that calls a model keeps its `ModelCaller` as ``_caller``; its ``timeout_s``
    then defaults to `default_timeout_s` of the caller's ``request_timeout_s``.
    """

    async_backend: bool = True
    _caller: ModelCaller | None = None
    _timeout_s: float | None = None

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
    def timeout_s(self) -> float | None:
        """The whole evaluation's time limit: as given, else twice ``request_timeout_s`` plus 10 s
        when a model is called (None for a local or callable backend)."""
        if self._timeout_s is not None or self._caller is None:
            return self._timeout_s
        return default_timeout_s(self._caller.settings.request_timeout_s)

    @timeout_s.setter
    def timeout_s(self, value: float | None) -> None:
        self._timeout_s = value

    def timeout_limit(self) -> str:
        """The ``timeout_s`` in force, in words for messages (``"timeout_s=20 s (the default: ...)"``)."""
        limit = self.timeout_s
        if limit is None:
            return "no timeout_s"
        if self._timeout_s is None and self._caller is not None:
            request = self._caller.settings.request_timeout_s
            return f"timeout_s={limit:g} s (the default: 2 x request_timeout_s={request:g} + 10 s)"
        return f"timeout_s={limit:g} s"

    @property
    def is_async(self) -> bool:
        """Scored on the pipeline's event loop when the backend is a network call."""
        return self.async_backend

    async def ameasure(self, output: Any, expected: Any, *, input: Any = None) -> MeasureValue:
        """Compute the metric, awaiting the model; raise on bad data."""
        raise NotImplementedError(f"{type(self).__name__} must implement ameasure()")

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> MeasureValue:
        """The synchronous form: runs :meth:`ameasure` on tracesim's model loop, within ``timeout_s``."""
        try:
            return run_sync(self._bounded(output, expected, input), self.timeout_s)
        except (TimeoutError, asyncio.TimeoutError, concurrent.futures.TimeoutError):
            raise TimeoutError(describe_timeout(self)) from None

    async def _bounded(self, output: Any, expected: Any, input: Any) -> MeasureValue:
        with evaluation_deadline(self.timeout_s, self.timeout_limit()):
            return await self.ameasure(output, expected, input=input)

    async def aevaluate(self, output: Any, expected: Any, *, input: Any = None) -> EvalResult:
        if expected is None and self.requires_expected:
            return self._skipped()
        start = time.perf_counter()
        try:
            # Whoever awaits this (the pipeline, a batch, an experiment) cancels it at timeout_s;
            # the deadline lets the model calls give up sooner, saying why, when a retry can't fit.
            value = await self._bounded(output, expected, input)
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
