"""`ModelCaller`: embeddings and chat completions with retries, limits and an optional cache."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tracesim._untraced import detach, untraced
from tracesim.evaluators._model._cache import DiskCache, cache_key
from tracesim.evaluators._model._limits import RateLimiter, RetryBudget
from tracesim.evaluators._model._loop import on_model_loop

__all__ = ["ModelCallError", "ModelCaller", "ModelSettings", "Usage"]

T = TypeVar("T")

_BACKOFF_BASE_S = 0.5
_BACKOFF_CAP_S = 20.0
_RETRY_AFTER_CAP_S = 60.0  # a server asking for longer is not waited for: the call fails as rate_limited


@dataclass(frozen=True)
class ModelSettings:
    """Where and how to call a model. ``None`` base URL and key: the ``openai`` client's own
    defaults (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``). Azure OpenAI when ``azure_endpoint`` is set.

    Example:
        >>> ModelSettings("text-embedding-3-small", base_url="http://127.0.0.1:8000/v1").endpoint
        'http://127.0.0.1:8000/v1'
    """

    model: str
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    azure_endpoint: str | None = None
    api_version: str | None = None
    request_timeout_s: float = 30.0
    max_retries: int = 4
    rpm: float | None = None
    tpm: float | None = None
    cache_dir: str | None = None

    @property
    def endpoint(self) -> str:
        return self.azure_endpoint or self.base_url or "openai-default"


@dataclass
class Usage:
    """What a call cost: tokens, requests made, retries, cache hits, time waiting for limits."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    requests: int = 0
    retries: int = 0
    cached: bool = False
    rate_limited_s: float = 0.0
    latency_s: float = 0.0

    def details(self) -> dict[str, Any]:
        """The figures recorded in a result's ``details``."""
        return {
            "usage": {
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "total_tokens": self.total_tokens,
            },
            "requests": self.requests,
            "retries": self.retries,
            "cached": self.cached,
            "latency_s": round(self.latency_s, 6),
        }


class ModelCallError(Exception):
    """A model call that failed for good. ``kind`` becomes the result's ``error_type``:
    ``rate_limited``, ``server_error``, ``connection``, ``timeout``, ``bad_response``,
    ``auth`` or ``bad_request``."""

    def __init__(self, kind: str, message: str, *, attempts: int, status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.attempts = attempts
        self.status = status


# One client, limiter and retry budget per endpoint, shared by every evaluator using it; they
# live on the model loop and are only touched from it.
_clients: dict[tuple[Any, ...], Any] = {}
_limiters: dict[tuple[Any, ...], RateLimiter] = {}
_budgets: dict[tuple[Any, ...], RetryBudget] = {}
_caches: dict[str, DiskCache] = {}


def _client(settings: ModelSettings) -> Any:
    import openai  # a core dependency, imported when the first model call runs

    key = (settings.base_url, settings.api_key, settings.azure_endpoint, settings.api_version)
    client = _clients.get(key)
    if client is None:
        if settings.azure_endpoint:
            client = openai.AsyncAzureOpenAI(
                azure_endpoint=settings.azure_endpoint,
                api_key=settings.api_key,
                api_version=settings.api_version,
                max_retries=0,  # retries are ours: with a budget and Retry-After honoured
            )
        else:
            client = openai.AsyncOpenAI(base_url=settings.base_url, api_key=settings.api_key, max_retries=0)
        _clients[key] = client
    return client


class ModelCaller:
    """Calls one model; safe to share between evaluators and threads.

    Example:
        >>> caller = ModelCaller(ModelSettings("text-embedding-3-small", base_url="http://127.0.0.1:9/v1"))
        >>> caller.settings.model
        'text-embedding-3-small'
    """

    def __init__(self, settings: ModelSettings) -> None:
        self.settings = settings
        self._cache = None
        if settings.cache_dir:
            self._cache = _caches.setdefault(settings.cache_dir, DiskCache(settings.cache_dir))

    # ------------------------------------------------------------ public calls (any loop)

    async def embed(self, texts: Sequence[str], *, dimensions: int | None = None) -> tuple[list[Any], Usage]:
        """One embedding per text, in one request."""
        return await on_model_loop(self._embed(list(texts), dimensions))

    async def chat(self, messages: list[dict[str, Any]], **options: Any) -> tuple[dict[str, Any], Usage]:
        """One chat completion: ``{"content", "arguments", "finish_reason"}`` (``arguments`` of a forced
        tool call)."""
        return await on_model_loop(self._chat(messages, options))

    # ------------------------------------------------------------ on the model loop

    async def _embed(self, texts: list[str], dimensions: int | None) -> tuple[list[Any], Usage]:
        usage = Usage()
        key = cache_key("embed", self.settings.endpoint, self.settings.model, dimensions, texts)
        hit = self._cache.get(key) if self._cache is not None else None
        if hit is not None:
            usage.cached = True
            return hit, usage
        options: dict[str, Any] = {"model": self.settings.model, "input": texts}
        if dimensions is not None:
            options["dimensions"] = dimensions
        estimate = sum(len(text) for text in texts) / 4
        response = await self._request(lambda c: c.embeddings.create(**options), estimate, usage)
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(texts):
            raise ModelCallError("bad_response", f"{len(data)} embeddings for {len(texts)} texts", attempts=1)
        vectors = [list(item.embedding) for item in data]
        _count(usage, getattr(response, "usage", None))
        if self._cache is not None:
            self._cache.put(key, vectors)
        return vectors, usage

    async def _chat(
        self, messages: list[dict[str, Any]], options: dict[str, Any]
    ) -> tuple[dict[str, Any], Usage]:
        usage = Usage()
        key = cache_key("chat", self.settings.endpoint, self.settings.model, messages, options)
        hit = self._cache.get(key) if self._cache is not None else None
        if hit is not None:
            usage.cached = True
            return hit, usage
        estimate = sum(len(str(m.get("content", ""))) for m in messages) / 4 + options.get("max_tokens", 256)
        request = {"model": self.settings.model, "messages": messages, **options}
        response = await self._request(lambda c: c.chat.completions.create(**request), estimate, usage)
        try:
            choice = response.choices[0]
            message = choice.message
            calls = getattr(message, "tool_calls", None) or []
            answer = {
                "content": message.content,
                "arguments": calls[0].function.arguments if calls else None,
                "finish_reason": choice.finish_reason,
            }
        except (AttributeError, IndexError, TypeError) as exc:
            raise ModelCallError("bad_response", f"no answer in the response: {exc}", attempts=1) from None
        _count(usage, getattr(response, "usage", None))
        if self._cache is not None:
            self._cache.put(key, answer)
        return answer, usage

    async def _request(self, send: Callable[[Any], Awaitable[T]], tokens: float, usage: Usage) -> T:
        settings = self.settings
        endpoint = (settings.endpoint, settings.model)
        limiter = _limiters.setdefault(endpoint, RateLimiter(rpm=settings.rpm, tpm=settings.tpm))
        budget = _budgets.setdefault(endpoint, RetryBudget())
        client = _client(settings).with_options(timeout=settings.request_timeout_s)
        started = time.monotonic()
        attempt = 0
        while True:
            usage.rate_limited_s += await limiter.acquire(tokens)
            usage.requests += 1
            token = untraced()  # the evaluator's own HTTP call is not the user's traffic
            try:
                response = await send(client)
            except Exception as exc:
                kind, status, wait = _classify(exc)
                retry = kind in _RETRYABLE and attempt < settings.max_retries and wait <= _RETRY_AFTER_CAP_S
                if not retry or not budget.take():
                    usage.latency_s = time.monotonic() - started
                    raise ModelCallError(kind, _describe(exc), attempts=attempt + 1, status=status) from None
                attempt += 1
                usage.retries += 1
                await asyncio.sleep(wait if wait > 0 else _backoff(attempt))
                continue
            finally:
                detach(token)
            budget.deposit()
            usage.latency_s = time.monotonic() - started
            return response


_RETRYABLE = frozenset({"rate_limited", "server_error", "connection", "timeout", "bad_response"})


def _classify(exc: BaseException) -> tuple[str, int | None, float]:
    """(kind, HTTP status, seconds the server asked us to wait or 0)."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return "timeout", None, 0.0
    if isinstance(exc, openai.APIConnectionError):
        return "connection", None, 0.0
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        wait = _retry_after(exc.response.headers)
        if status == 429:
            return "rate_limited", status, wait
        if status >= 500 or status in (408, 409):
            return "server_error", status, wait
        return ("auth" if status in (401, 403) else "bad_request"), status, 0.0
    if isinstance(exc, (openai.APIResponseValidationError, ValueError)):
        return "bad_response", None, 0.0  # a body that is not JSON, or not the expected shape
    return "bad_response", None, 0.0


def _retry_after(headers: Any) -> float:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date); 0 if absent."""
    try:
        milliseconds = headers.get("retry-after-ms")
        if milliseconds is not None:
            return max(0.0, float(milliseconds) / 1000)
        value = headers.get("retry-after")
        if value is None:
            return 0.0
        try:
            return max(0.0, float(value))
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, OverflowError):
        return 0.0


def _backoff(attempt: int) -> float:
    """Exponential backoff with full jitter: spreads retries of many callers apart."""
    return random.uniform(0, min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2**attempt))


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text[:500]}"


def _count(usage: Usage, reported: Any) -> None:
    if reported is None:
        return
    usage.prompt_tokens += int(getattr(reported, "prompt_tokens", 0) or 0)
    usage.completion_tokens += int(getattr(reported, "completion_tokens", 0) or 0)
    usage.total_tokens += int(getattr(reported, "total_tokens", 0) or 0)
