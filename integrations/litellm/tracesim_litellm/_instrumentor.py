"""The LiteLLM instrumentor: completion and embedding calls as util-genai invocations.

An OpenTelemetry ``BaseInstrumentor`` (so it takes ``tracer_provider``, ``completion_hook`` and
``raise_exception_on_conflict`` like the OpenTelemetry project's GenAI instrumentations, and
checks the installed LiteLLM against `SUPPORTED`). Installing it replaces the public entry
points on the ``litellm`` module (`PATCHED`) with functions that open a ``chat <model>`` span
(``embeddings <model>`` for ``embedding`` / ``aembedding``) through ``opentelemetry-util-genai``'s
``TelemetryHandler`` around the original call. The package's docstring says why it patches
there and not deeper.

What a span records, read from the arguments LiteLLM was given and the OpenAI-shaped response
it returns: ``gen_ai.provider.name`` from LiteLLM's routing prefix (``openai/gpt-4o-mini`` ->
``openai``, request model ``gpt-4o-mini``), mapped to the GenAI conventions' names where they
differ (``bedrock`` -> ``aws.bedrock``); request parameters; the response id and model, finish
reasons and token usage; ``server.address`` / ``server.port`` when ``api_base`` is given; and,
for the completion hook (tracesim writes them only when it captures content), the messages,
the tool definitions and the answer with its tool calls.

Example:
    >>> provider_and_model("openai/gpt-4o-mini", None, frozenset({"openai"}), {})
    ('openai', 'gpt-4o-mini')
    >>> prices = {"claude-3-5-haiku": {"litellm_provider": "anthropic"}}
    >>> provider_and_model("claude-3-5-haiku", None, frozenset(), prices)
    ('anthropic', 'claude-3-5-haiku')
    >>> provider_and_model("bedrock/anthropic.claude-v2", None, frozenset({"bedrock"}), {})
    ('aws.bedrock', 'anthropic.claude-v2')
"""

from __future__ import annotations

import functools
import importlib
import json
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.util.genai.handler import TelemetryHandler
from opentelemetry.util.genai.invocation import EmbeddingInvocation, InferenceInvocation
from opentelemetry.util.genai.stream import AsyncStreamWrapper, SyncStreamWrapper
from opentelemetry.util.genai.types import (
    FunctionToolDefinition,
    InputMessage,
    MessagePart,
    OutputMessage,
    TextPart,
    ToolCallRequestPart,
    ToolCallResponsePart,
    ToolDefinition,
)

__all__ = ["PATCHED", "SUPPORTED", "LiteLLMInstrumentor", "provider_and_model"]

SUPPORTED = ("litellm >= 1.80, < 2",)
"""The LiteLLM versions the instrumentor accepts (OpenTelemetry's dependency check reads it)."""

PATCHED = ("completion", "acompletion", "embedding", "aembedding")
"""The ``litellm`` module attributes replaced while instrumented."""

_logger = logging.getLogger(__name__)

# LiteLLM's provider ids whose GenAI semantic-conventions name differs (gen_ai.provider.name).
_SEMCONV_PROVIDERS: Mapping[str, str] = {
    "azure": "azure.ai.openai",
    "azure_ai": "azure.ai.inference",
    "bedrock": "aws.bedrock",
    "bedrock_converse": "aws.bedrock",
    "gemini": "gcp.gemini",
    "mistral": "mistral_ai",
    "vertex_ai": "gcp.vertex_ai",
    "vertex_ai_beta": "gcp.vertex_ai",
    "watsonx": "ibm.watsonx.ai",
    "xai": "x_ai",
}
_UNKNOWN_PROVIDER = "litellm"  # LiteLLM routes the call; which provider it picks is not known


def provider_and_model(
    model: str, custom_provider: Any, providers: Collection[str], model_cost: Mapping[str, Any]
) -> tuple[str, str]:
    """``(gen_ai.provider.name, request model)`` for a LiteLLM model string.

    LiteLLM's own resolver (``get_llm_provider``) is not called: it prints to stdout for a
    model it does not know and, for some providers, starts an OAuth device flow. The routing
    is read the way LiteLLM reads it first: an explicit ``custom_llm_provider``, else a known
    provider prefix (``openai/``), else the provider LiteLLM's price list names for the model.
    """
    provider: str | None = None
    name = model
    if isinstance(custom_provider, str) and custom_provider:
        provider, name = custom_provider, model.removeprefix(f"{custom_provider}/")
    elif "/" in model and model.split("/", 1)[0] in providers:
        provider, name = model.split("/", 1)
    else:
        entry = model_cost.get(model)
        found = entry.get("litellm_provider") if isinstance(entry, Mapping) else None
        provider = found if isinstance(found, str) and found else None
    if provider is None:
        return _UNKNOWN_PROVIDER, name
    return _SEMCONV_PROVIDERS.get(provider, provider), name


class LiteLLMInstrumentor(BaseInstrumentor):  # type: ignore[misc]  # BaseInstrumentor is untyped
    """Traces LiteLLM's `PATCHED` entry points (and so LiteLLM's ``Router``, which calls them).

    ``instrument(tracer_provider=..., completion_hook=...)`` installs it, ``uninstrument()``
    restores the original functions (when nothing has replaced them since; otherwise the
    wrappers stay in place and pass calls straight through). A function imported before
    ``instrument()`` (``from litellm import completion``) is the original and is not traced.
    """

    _calls: _Calls | None = None  # (BaseInstrumentor is a singleton: state on the class)
    _originals: dict[str, Any] = {}  # noqa: RUF012
    _wrappers: dict[str, Any] = {}  # noqa: RUF012

    def instrumentation_dependencies(self) -> Collection[str]:
        return SUPPORTED

    def _instrument(self, **kwargs: Any) -> None:
        litellm: Any = importlib.import_module("litellm")
        handler = TelemetryHandler(
            tracer_provider=kwargs.get("tracer_provider"),
            meter_provider=kwargs.get("meter_provider"),
            logger_provider=kwargs.get("logger_provider"),
            completion_hook=kwargs.get("completion_hook"),
            instrumentation_scope_name="tracesim_litellm",
        )
        calls = _Calls(handler, litellm)
        wrappers = {
            "completion": calls.completion,
            "acompletion": calls.acompletion,
            "embedding": calls.embedding,
            "aembedding": calls.aembedding,
        }
        self._calls, self._originals, self._wrappers = calls, {}, {}
        for name in PATCHED:
            original = _unwrap_inert(getattr(litellm, name))
            wrapper = functools.wraps(original)(wrappers[name](original))
            wrapper._tracesim_calls = calls  # type: ignore[attr-defined]
            self._originals[name], self._wrappers[name] = original, wrapper
            setattr(litellm, name, wrapper)

    def _uninstrument(self, **kwargs: Any) -> None:
        litellm: Any = importlib.import_module("litellm")
        calls: _Calls | None = getattr(self, "_calls", None)
        if calls is not None:
            calls.active = False  # a wrapper something else still holds passes calls through
        for name, wrapper in self._wrappers.items():
            if getattr(litellm, name, None) is wrapper:  # else wrapped again since: left inert
                setattr(litellm, name, self._originals[name])
        self._calls, self._originals, self._wrappers = None, {}, {}


def _unwrap_inert(function: Any) -> Any:
    """``function`` without the inert wrappers of earlier installations on top of it.

    Another instrumentation that wrapped tracesim's wrapper and restores it on its own
    ``uninstrument()`` puts an inert wrapper of a past installation back on the module.
    """
    while (calls := getattr(function, "_tracesim_calls", None)) is not None and not calls.active:
        function = function.__wrapped__
    return function


class _Calls:
    """The wrappers of one installation, sharing its handler."""

    def __init__(self, handler: TelemetryHandler, litellm: Any) -> None:
        self._handler = handler
        self.active = True  # until this installation is uninstrumented
        self._providers = frozenset(str(getattr(p, "value", p)) for p in litellm.provider_list)
        self._litellm = litellm

    def completion(self, original: Callable[..., Any]) -> Callable[..., Any]:
        return self._sync(
            original, self._start, functools.partial(self._finish, stream=_SyncStream), "acompletion"
        )

    def acompletion(self, original: Callable[..., Any]) -> Callable[..., Any]:
        return self._async(original, self._start, functools.partial(self._finish, stream=_AsyncStream))

    def embedding(self, original: Callable[..., Any]) -> Callable[..., Any]:
        return self._sync(original, self._start_embedding, _finish_embedding, "aembedding")

    def aembedding(self, original: Callable[..., Any]) -> Callable[..., Any]:
        return self._async(original, self._start_embedding, _finish_embedding)

    def _sync(
        self,
        original: Callable[..., Any],
        start: Callable[[tuple[Any, ...], dict[str, Any]], Any],
        finish: Callable[[Any, Any, dict[str, Any]], Any],
        async_flag: str,
    ) -> Callable[..., Any]:
        """``original`` traced: ``start`` makes the invocation (None: untraced), ``finish`` ends it."""

        def traced(*args: Any, **kwargs: Any) -> Any:
            # acompletion=True (aembedding=True) asks the sync entry point for a coroutine: the
            # async function's own work, traced there
            if not self.active or kwargs.get(async_flag) is True:
                return original(*args, **kwargs)
            invocation = start(args, kwargs)
            if invocation is None:
                return original(*args, **kwargs)
            try:
                result = original(*args, **kwargs)
            except BaseException as error:
                invocation.fail(error)
                raise
            return finish(invocation, result, kwargs)

        return traced

    def _async(
        self,
        original: Callable[..., Any],
        start: Callable[[tuple[Any, ...], dict[str, Any]], Any],
        finish: Callable[[Any, Any, dict[str, Any]], Any],
    ) -> Callable[..., Any]:
        """The same for a coroutine function."""

        async def traced(*args: Any, **kwargs: Any) -> Any:
            if not self.active:
                return await original(*args, **kwargs)
            invocation = start(args, kwargs)
            if invocation is None:
                return await original(*args, **kwargs)
            try:
                result = await original(*args, **kwargs)
            except BaseException as error:
                invocation.fail(error)
                raise
            return finish(invocation, result, kwargs)

        return traced

    def _route(
        self, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> tuple[str, str, str | None, int | None]:
        """``(provider, request model, server address, server port)``; ValueError without a model."""
        model = kwargs.get("model", args[0] if args else None)
        if not isinstance(model, str):
            raise ValueError("no model")  # LiteLLM refuses the call itself; nothing to describe
        provider, request_model = provider_and_model(
            model, kwargs.get("custom_llm_provider"), self._providers, self._litellm.model_cost
        )
        return (provider, request_model, *_server(kwargs.get("api_base") or kwargs.get("base_url")))

    def _start_embedding(
        self, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> EmbeddingInvocation | None:
        try:
            provider, request_model, address, port = self._route(args, kwargs)
            invocation = self._handler.embedding(
                provider, request_model=request_model, server_address=address, server_port=port
            )
        except Exception:
            _logger.debug("tracesim-litellm could not read a call; it goes untraced", exc_info=True)
            return None
        dimensions = _number(kwargs.get("dimensions"))
        if isinstance(dimensions, int):
            invocation.dimension_count = dimensions
        if isinstance(kwargs.get("encoding_format"), str):
            invocation.encoding_formats = [kwargs["encoding_format"]]
        return invocation

    def _start(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> InferenceInvocation | None:
        """The invocation for a call (its span started), or None when the call cannot be read."""
        try:
            provider, request_model, address, port = self._route(args, kwargs)
            invocation = self._handler.inference(
                provider, request_model=request_model, server_address=address, server_port=port
            )
        except Exception:
            _logger.debug("tracesim-litellm could not read a call; it goes untraced", exc_info=True)
            return None
        try:
            _describe_request(invocation, args, kwargs, self._handler.should_capture_content())
        except Exception:
            _logger.debug("tracesim-litellm could not read a call's request", exc_info=True)
        return invocation

    def _finish(
        self, invocation: InferenceInvocation, result: Any, kwargs: Mapping[str, Any], stream: type[Any]
    ) -> Any:
        capture = self._handler.should_capture_content()
        if kwargs.get("stream") is True and not isinstance(result, self._litellm.ModelResponse):
            try:
                return stream(result, invocation, capture)
            except Exception:  # not a stream after all (a cached or mocked answer): a plain end
                _logger.debug("tracesim-litellm could not follow a stream", exc_info=True)
                invocation.stop()
                return result
        try:
            _describe_response(invocation, result, capture)
        except Exception:
            _logger.debug("tracesim-litellm could not read a response", exc_info=True)
        invocation.stop()
        return result


def _finish_embedding(invocation: EmbeddingInvocation, result: Any, kwargs: Mapping[str, Any]) -> Any:
    try:
        if isinstance(_get(result, "model"), str):
            invocation.response_model_name = _get(result, "model")
        data = _get(result, "data") or ()
        vector = _get(data[0], "embedding") if data else None
        if isinstance(vector, Sequence) and invocation.dimension_count is None:
            invocation.dimension_count = len(vector)
        usage = _get(result, "usage")
        if usage is not None:
            invocation.input_tokens = _number(_get(usage, "prompt_tokens"))
    except Exception:
        _logger.debug("tracesim-litellm could not read an embedding response", exc_info=True)
    invocation.stop()
    return result


def _server(base: Any) -> tuple[str | None, int | None]:
    if not isinstance(base, str) or not base:
        return None, None
    try:
        parts = urlsplit(base)
        return parts.hostname, parts.port
    except ValueError:
        return None, None


def _get(item: Any, key: str) -> Any:
    """A field of a message, a tool call or a part: dicts and LiteLLM's objects alike."""
    return item.get(key) if isinstance(item, Mapping) else getattr(item, key, None)


def _number(value: Any) -> Any:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _describe_request(
    invocation: InferenceInvocation, args: tuple[Any, ...], kwargs: Mapping[str, Any], capture: bool
) -> None:
    invocation.temperature = _number(kwargs.get("temperature"))
    invocation.top_p = _number(kwargs.get("top_p"))
    invocation.max_tokens = _number(kwargs.get("max_completion_tokens")) or _number(kwargs.get("max_tokens"))
    invocation.presence_penalty = _number(kwargs.get("presence_penalty"))
    invocation.frequency_penalty = _number(kwargs.get("frequency_penalty"))
    invocation.seed = _number(kwargs.get("seed"))
    stop = kwargs.get("stop")
    if isinstance(stop, str):
        invocation.stop_sequences = [stop]
    elif isinstance(stop, Sequence) and all(isinstance(s, str) for s in stop):
        invocation.stop_sequences = list(stop)
    choices = _number(kwargs.get("n"))
    if isinstance(choices, int) and choices != 1:
        invocation.request_choice_count = choices
    if capture:  # only the completion hook reads them (tracesim writes them when it captures)
        messages = kwargs.get("messages", args[1] if len(args) > 1 else None)
        invocation.input_messages = _input_messages(messages)
        invocation.tool_definitions = _tool_definitions(kwargs.get("tools"))


def _text_parts(content: Any) -> list[MessagePart]:
    """A message's text: a string, or the text parts of a list of parts (images are left out)."""
    if isinstance(content, str):
        return [TextPart(content=content)] if content else []
    parts: list[MessagePart] = []
    if isinstance(content, Sequence):
        for part in content:
            text = _get(part, "text")
            if _get(part, "type") == "text" and isinstance(text, str):
                parts.append(TextPart(content=text))
    return parts


def _arguments(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _tool_call_parts(tool_calls: Any) -> list[MessagePart]:
    parts: list[MessagePart] = []
    for call in tool_calls or ():
        function = _get(call, "function")
        name = _get(function, "name") if function is not None else None
        parts.append(
            ToolCallRequestPart(
                name=str(name or ""),
                id=_get(call, "id"),
                arguments=_arguments(_get(function, "arguments") if function is not None else None),
            )
        )
    return parts


def _input_messages(messages: Any) -> list[InputMessage]:
    result: list[InputMessage] = []
    if not isinstance(messages, Sequence) or isinstance(messages, str):
        return result
    for message in messages:
        role = str(_get(message, "role") or "user")
        content = _get(message, "content")
        if role == "tool":
            parts: list[MessagePart] = [
                ToolCallResponsePart(response=content, id=_get(message, "tool_call_id"))
            ]
        else:
            parts = _text_parts(content) + _tool_call_parts(_get(message, "tool_calls"))
        result.append(InputMessage(role=role, parts=parts))
    return result


def _tool_definitions(tools: Any) -> list[ToolDefinition] | None:
    if not isinstance(tools, Sequence) or not tools:
        return None
    definitions: list[ToolDefinition] = []
    for tool in tools:
        function = _get(tool, "function")
        if function is None:
            continue
        definitions.append(
            FunctionToolDefinition(
                name=str(_get(function, "name") or ""),
                description=_get(function, "description"),
                parameters=_get(function, "parameters"),
            )
        )
    return definitions or None


def _set_usage(invocation: InferenceInvocation, usage: Any) -> None:
    if usage is None:
        return
    invocation.input_tokens = _number(_get(usage, "prompt_tokens"))
    invocation.output_tokens = _number(_get(usage, "completion_tokens"))
    prompt_details = _get(usage, "prompt_tokens_details")
    if prompt_details is not None:
        invocation.cache_read_input_tokens = _number(_get(prompt_details, "cached_tokens"))
    completion_details = _get(usage, "completion_tokens_details")
    if completion_details is not None:
        invocation.thinking_tokens = _number(_get(completion_details, "reasoning_tokens"))


def _describe_response(invocation: InferenceInvocation, response: Any, capture: bool) -> None:
    if isinstance(_get(response, "id"), str):
        invocation.response_id = _get(response, "id")
    if isinstance(_get(response, "model"), str):
        invocation.response_model_name = _get(response, "model")
    choices = _get(response, "choices") or ()
    invocation.finish_reasons = [str(_get(choice, "finish_reason") or "error") for choice in choices]
    _set_usage(invocation, _get(response, "usage"))
    if capture:
        outputs = []
        for choice in choices:
            message = _get(choice, "message")
            parts = _text_parts(_get(message, "content")) + _tool_call_parts(_get(message, "tool_calls"))
            role = str(_get(message, "role") or "assistant")
            outputs.append(OutputMessage(role=role, parts=parts, finish_reason=_get(choice, "finish_reason")))
        invocation.output_messages = outputs


class _Choice:
    """One choice of a stream, put together from its deltas."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.finish_reason: str | None = None
        self.tool_calls: dict[int, dict[str, Any]] = {}

    def add(self, delta: Any) -> None:
        content = _get(delta, "content")
        if isinstance(content, str):
            self.text.append(content)
        for call in _get(delta, "tool_calls") or ():
            index = _get(call, "index")
            slot = self.tool_calls.setdefault(index if isinstance(index, int) else len(self.tool_calls), {})
            if _get(call, "id"):
                slot["id"] = _get(call, "id")
            function = _get(call, "function")
            if function is not None:
                if _get(function, "name"):
                    slot["name"] = _get(function, "name")
                if isinstance(_get(function, "arguments"), str):
                    slot["arguments"] = slot.get("arguments", "") + _get(function, "arguments")

    def message(self) -> OutputMessage:
        parts: list[MessagePart] = [TextPart(content="".join(self.text))] if any(self.text) else []
        for _, call in sorted(self.tool_calls.items()):
            parts.append(
                ToolCallRequestPart(
                    name=str(call.get("name", "")),
                    id=call.get("id"),
                    arguments=_arguments(call.get("arguments")),
                )
            )
        return OutputMessage(role="assistant", parts=parts, finish_reason=self.finish_reason)


class _StreamState:
    """What a stream's chunks say, kept until the stream ends."""

    _self_call: InferenceInvocation
    _self_capture: bool
    _self_choices: dict[int, _Choice]
    _self_usage: Any

    def _setup(self, invocation: InferenceInvocation, capture: bool) -> None:
        self._self_call, self._self_capture = invocation, capture
        self._self_choices, self._self_usage = {}, None
        invocation.suspend()  # the caller's code between chunks is not inside the model call

    def _process_chunk(self, chunk: Any) -> None:
        invocation = self._self_call
        if invocation.response_id is None and isinstance(_get(chunk, "id"), str):
            invocation.response_id = _get(chunk, "id")
        if invocation.response_model_name is None and isinstance(_get(chunk, "model"), str):
            invocation.response_model_name = _get(chunk, "model")
        usage = _get(chunk, "usage")
        if usage is not None:
            self._self_usage = usage
        for choice in _get(chunk, "choices") or ():
            index = _get(choice, "index")
            state = self._self_choices.setdefault(index if isinstance(index, int) else 0, _Choice())
            if _get(choice, "finish_reason"):
                state.finish_reason = str(_get(choice, "finish_reason"))
            delta = _get(choice, "delta")
            if delta is not None and self._self_capture:
                state.add(delta)

    def _end(self, error: BaseException | None) -> None:
        invocation = self._self_call
        try:
            _set_usage(invocation, self._self_usage)
            choices = [self._self_choices[index] for index in sorted(self._self_choices)]
            reasons = [choice.finish_reason for choice in choices if choice.finish_reason]
            if reasons:
                invocation.finish_reasons = reasons
            if self._self_capture:
                invocation.output_messages = [choice.message() for choice in choices]
        except Exception:
            _logger.debug("tracesim-litellm could not read a stream's end", exc_info=True)
        if error is None:
            invocation.stop()
        else:
            invocation.fail(error)

    def _on_stream_end(self) -> None:
        self._end(None)

    def _on_stream_error(self, error: BaseException) -> None:
        self._end(error)


class _SyncStream(_StreamState, SyncStreamWrapper[Any]):
    """LiteLLM's stream (``CustomStreamWrapper``) as it was, its span ended with the stream."""

    def __init__(self, stream: Any, invocation: InferenceInvocation, capture: bool) -> None:
        super().__init__(stream, invocation)
        self._setup(invocation, capture)


class _AsyncStream(_StreamState, AsyncStreamWrapper[Any]):
    """The same for ``acompletion(stream=True)``, read with ``async for``."""

    def __init__(self, stream: Any, invocation: InferenceInvocation, capture: bool) -> None:
        super().__init__(stream, invocation)
        self._setup(invocation, capture)
