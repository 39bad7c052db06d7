"""`ModelCaller`: embeddings and chat completions with retries, limits and an optional cache."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import email.utils
import random
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracesim._own_model_calls import detach, untraced
from tracesim.evaluators._model._cache import DiskCache, cache_key
from tracesim.evaluators._model._limits import RateLimiter, RetryBudget
from tracesim.evaluators._model._loop import on_model_loop
from tracesim.evaluators._model._response import (
    BadResponse,
    TooLarge,
    chat_answer,
    default_max_bytes,
    embeddings,
    read_json,
    read_usage,
)

__all__ = ["Deadline", "ModelCallError", "ModelCaller", "ModelSettings", "Usage", "evaluation_deadline"]

_BACKOFF_BASE_S = 0.5
_BACKOFF_CAP_S = 20.0
_RETRY_AFTER_CAP_S = 60.0  # a server asking for longer is not waited for: the call fails as rate_limited


@dataclass(frozen=True)
class ModelSettings:
    """Where and how to call a model. ``None`` base URL and key: the ``openai`` client's own
    defaults (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``). Azure OpenAI when ``azure_endpoint`` is set.

    ``request_timeout_s`` bounds each request as a whole: connect, headers and the whole body.
    ``max_response_bytes`` caps a response body; ``None`` derives it from the request
    (`default_max_bytes`: 1 MiB, or 64 bytes per ``max_tokens``, or 256 KiB per embedded text).

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
    max_response_bytes: int | None = None

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
    dropped: list[str] = field(default_factory=list)
    """Usage fields the server sent that were not token counts (NaN, text...): left out."""

    def details(self) -> dict[str, Any]:
        """The figures recorded in a result's ``details`` (``usage_dropped`` names unreadable fields)."""
        dropped = {"usage_dropped": list(self.dropped)} if self.dropped else {}
        return dropped | {
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
    ``response_too_large``, ``auth`` or ``bad_request``."""

    def __init__(self, kind: str, message: str, *, attempts: int, status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.attempts = attempts
        self.status = status


@dataclass(frozen=True)
class Deadline:
    """When the evaluation that makes a call must be done (``time.monotonic()``), and the setting
    that says so, for messages (``"timeout_s=20"``)."""

    at: float
    limit: str


_deadline: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar("tracesim_deadline", default=None)


@contextlib.contextmanager
def evaluation_deadline(seconds: float | None, limit: str) -> Iterator[None]:
    """Model calls made inside stop retrying, and cut their last request short, ``seconds`` from now.

    Example:
        >>> with evaluation_deadline(20.0, "timeout_s=20"):
        ...     _deadline.get().limit
        'timeout_s=20'
    """
    token = _deadline.set(None if seconds is None else Deadline(time.monotonic() + seconds, limit))
    try:
        yield
    finally:
        _deadline.reset(token)


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

    Each request is bounded as a whole (connect, headers and body) by ``request_timeout_s``,
    and its body by ``max_response_bytes``; retries stop at the deadline of the evaluation
    that asked (see `evaluation_deadline`).

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
        return await on_model_loop(self._embed(list(texts), dimensions, _deadline.get()))

    async def chat(self, messages: list[dict[str, Any]], **options: Any) -> tuple[dict[str, Any], Usage]:
        """One chat completion: ``{"content", "arguments", "finish_reason"}`` (``arguments`` of a forced
        tool call)."""
        return await on_model_loop(self._chat(messages, options, _deadline.get()))

    # ------------------------------------------------------------ on the model loop

    async def _embed(
        self, texts: list[str], dimensions: int | None, deadline: Deadline | None
    ) -> tuple[list[Any], Usage]:
        usage = Usage()
        key = cache_key("embed", self.settings.endpoint, self.settings.model, dimensions, texts)
        hit = self._cache.get(key) if self._cache is not None else None
        if hit is not None:
            usage.cached = True
            return hit, usage
        options: dict[str, Any] = {"model": self.settings.model, "input": texts, "encoding_format": "base64"}
        if dimensions is not None:
            options["dimensions"] = dimensions
        estimate = sum(len(text) for text in texts) / 4
        limit = self.settings.max_response_bytes or default_max_bytes(texts=len(texts))
        data = await self._request("/embeddings", options, estimate, usage, limit, deadline)
        try:
            vectors = embeddings(data, len(texts))
        except BadResponse as exc:
            raise ModelCallError("bad_response", str(exc), attempts=usage.requests) from None
        _count(usage, data)
        if self._cache is not None:
            self._cache.put(key, vectors)
        return vectors, usage

    async def _chat(
        self, messages: list[dict[str, Any]], options: dict[str, Any], deadline: Deadline | None
    ) -> tuple[dict[str, Any], Usage]:
        usage = Usage()
        key = cache_key("chat", self.settings.endpoint, self.settings.model, messages, options)
        hit = self._cache.get(key) if self._cache is not None else None
        if hit is not None:
            usage.cached = True
            return hit, usage
        estimate = sum(len(str(m.get("content", ""))) for m in messages) / 4 + options.get("max_tokens", 256)
        request = {"model": self.settings.model, "messages": messages, **options}
        limit = self.settings.max_response_bytes or default_max_bytes(options.get("max_tokens"))
        data = await self._request("/chat/completions", request, estimate, usage, limit, deadline)
        try:
            answer = chat_answer(data)
        except BadResponse as exc:
            raise ModelCallError("bad_response", str(exc), attempts=usage.requests) from None
        _count(usage, data)
        if self._cache is not None:
            self._cache.put(key, answer)
        return answer, usage

    async def _request(
        self,
        path: str,
        body: dict[str, Any],
        tokens: float,
        usage: Usage,
        max_bytes: int,
        deadline: Deadline | None,
    ) -> Any:
        """The JSON body of one successful request, retried with a budget until ``deadline``."""
        settings = self.settings
        endpoint = (settings.endpoint, settings.model)
        limiter = _limiters.setdefault(endpoint, RateLimiter(rpm=settings.rpm, tpm=settings.tpm))
        budget = _budgets.setdefault(endpoint, RetryBudget())
        client = _client(settings).with_options(timeout=settings.request_timeout_s)
        started = time.monotonic()
        attempt = 0
        try:
            while True:
                usage.rate_limited_s += await limiter.acquire(tokens)
                seconds, limit = self._time_left(deadline, attempt)
                usage.requests += 1
                token = untraced()  # the evaluator's own HTTP call is not the user's traffic
                try:
                    # The whole request under one deadline: the client's own timeouts are per
                    # read, and a body trickling a byte at a time never trips them.
                    data = await asyncio.wait_for(_receive(client, path, body, max_bytes), seconds)
                except Exception as exc:
                    failed = exc
                else:
                    budget.deposit()
                    return data
                finally:
                    detach(token)
                kind, status, wait, message = _failure(failed, limit)
                pause = wait if wait > 0 else _backoff(attempt + 1)
                refused = _why_not_retry(kind, attempt, settings.max_retries, wait, pause, deadline)
                if refused is not None or not budget.take():
                    raise ModelCallError(kind, message + (refused or ""), attempts=attempt + 1, status=status)
                attempt += 1
                usage.retries += 1
                await asyncio.sleep(pause)
        finally:
            usage.latency_s = time.monotonic() - started

    def _time_left(self, deadline: Deadline | None, attempt: int) -> tuple[float, str]:
        """Seconds the next request may take, and the setting that says so."""
        seconds = self.settings.request_timeout_s
        limit = f"request_timeout_s={seconds:g}"
        if deadline is not None:
            left = deadline.at - time.monotonic()
            if left <= 0:
                raise ModelCallError("timeout", f"no time left within {deadline.limit}", attempts=attempt)
            if left < seconds:
                seconds, limit = left, f"the {left:.3g} s left of {deadline.limit}"
        return seconds, limit


async def _receive(client: Any, path: str, body: dict[str, Any], max_bytes: int) -> Any:
    """POST ``body`` and read the JSON answer, at most ``max_bytes`` of it.

    The client's documented request for any path, with the response left unread (``stream``),
    so the body is read here chunk by chunk; a 4xx/5xx raises as from ``create()``. It also
    keeps the evaluator's call out of any instrumentation of ``create()``.
    """
    import httpx  # the response class the client is asked for (it answers with its own, alike)

    response = await client.post(path, body=body, cast_to=httpx.Response, stream=True)
    try:
        return await read_json(response, max_bytes)
    finally:
        await response.aclose()


def _failure(exc: BaseException, limit: str) -> tuple[str, int | None, float, str]:
    """(kind, HTTP status, seconds the server asked to wait, message) of a failed request."""
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return "timeout", None, 0.0, f"no complete response within {limit} (connect, headers and body)"
    if isinstance(exc, TooLarge):
        return "response_too_large", None, 0.0, f"{exc}; not read further"
    kind, status, wait = _classify(exc)
    message = _describe(exc)
    if kind == "timeout":
        message += f" ({limit})"
    return kind, status, wait, message


def _why_not_retry(
    kind: str, attempt: int, max_retries: int, wait: float, pause: float, deadline: Deadline | None
) -> str | None:
    """None when a failed request may be retried, else the reason it is not (for the message)."""
    if kind not in _RETRYABLE or attempt >= max_retries:
        return ""
    if wait > _RETRY_AFTER_CAP_S:
        cap = _RETRY_AFTER_CAP_S
        return f"; the server asked to wait {wait:g} s (Retry-After), more than the {cap:g} s tracesim waits"
    if deadline is not None and time.monotonic() + pause >= deadline.at:
        return f"; a retry in {pause:.3g} s would pass {deadline.limit}"
    return None


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
    return _transport_kind(exc), None, 0.0


def _transport_kind(exc: BaseException) -> str:
    """The kind of an error of the HTTP layer met while the body is read (the ``openai`` client
    wraps those only until the headers): ``httpx`` or, in newer clients, ``httpx2``."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    if type(exc).__module__.split(".")[0] in ("httpx", "httpx2", "httpcore"):
        if "TimeoutException" in names or "TimeoutError" in names:
            return "timeout"
        if "DecodingError" not in names:
            return "connection"
    return "bad_response"  # a body that is not JSON, or not the expected shape


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


def _count(usage: Usage, data: Any) -> None:
    counts: dict[str, int] = {}
    usage.dropped = read_usage(data.get("usage") if isinstance(data, dict) else None, counts)
    usage.prompt_tokens += counts.get("prompt_tokens", 0)
    usage.completion_tokens += counts.get("completion_tokens", 0)
    usage.total_tokens += counts.get("total_tokens", 0)
