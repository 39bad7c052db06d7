"""The MCP client's tool calls as tool spans: the wrappers `MCPIntegration` installs.

``ClientSession.call_tool`` is wrapped on the class, so every session sees it whatever imported
it first: a raw session, ``mcp.Client``, or a framework's MCP tools (the OpenAI Agents SDK's
``MCPServerStdio``, pydantic-ai's toolsets). ``mcp.Client.call_tool`` is wrapped too: it may
send one call in several rounds, each a ``ClientSession.call_tool``, and they make one span.
Three small helpers feed the span what the call alone does not show: the JSON-RPC request id
(``JSONRPCDispatcher._allocate_id``, read once per call through a context variable) and the
transport (a session opened over ``stdio_client`` talks through a pipe: its process is
started by ``_create_platform_compatible_process``, which ``stdio_client`` looks up in its
module on every call, and the session made next in that context is marked).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from tracesim.instrumentation import CurrentProvider, MissingIntegrationError, captured_text, captures

__all__ = ["MCPIntegration"]

_log = logging.getLogger("tracesim_mcp")

TOOL_CALL = "tools/call"
TOOLS_LIST = "tools/list"
_TRANSPORT_ATTRIBUTE = "_tracesim_transport"


class _RequestId:
    """Where the dispatcher leaves the id of the first request a traced call sends."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value: int | str | None = None


_request: contextvars.ContextVar[_RequestId | None] = contextvars.ContextVar(
    "tracesim_mcp_request", default=None
)
# set when stdio_client starts a server process ("pipe") or streamable_http_client makes its
# transport (the transport itself: its URL, its session id once known), taken by the next
# session made in that context
_opened_transport: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "tracesim_mcp_transport", default=None
)


class MCPIntegration:
    """tracesim's `Integration` for the ``mcp`` SDK: wraps its client's tool calls (see the module).

    ``capture`` overrides tracesim's ``capture`` for the tools' arguments and results (None
    follows it). Installing twice is a no-op; ``uninstrument`` puts the SDK's own methods back.

    Example:
        >>> integration = MCPIntegration()
        >>> integration.uninstrument()  # off already: nothing to do
    """

    name = "mcp"

    def __init__(self) -> None:
        self.capture: bool | None = None
        self._lock = threading.Lock()
        self._patched: list[tuple[Any, str, Any]] = []  # (owner, attribute, original)
        self._tracer = CurrentProvider().get_tracer("tracesim_mcp")

    def instrument(self, capture: bool | None) -> bool:
        """Wrap the client (False when it already was); ``capture`` applies either way.

        Raises:
            MissingIntegrationError: the ``mcp`` SDK is not installed, or it is a version
                without ``ClientSession.call_tool`` (mcp 2.x is supported).
        """
        with self._lock:
            self.capture = capture
            if self._patched:
                return False
            try:
                from mcp.client.session import ClientSession
            except ImportError:
                raise MissingIntegrationError(self.name) from None
            if not callable(getattr(ClientSession, "call_tool", None)):
                raise MissingIntegrationError(self.name, "mcp without ClientSession.call_tool")
            self._wrap(ClientSession, "call_tool", self._call_tool)
            self._wrap(ClientSession, "list_tools", self._list_tools)
            self._wrap(ClientSession, "__init__", _remember_transport)
            # mcp.Client may send a call in rounds (input requests, a re-list and retry): one span,
            # which each round's ClientSession.call_tool finds current and adds its details to
            self._wrap_optional("mcp.client.client", "Client", "call_tool", self._call_tool)
            self._wrap_optional(
                "mcp.shared.jsonrpc_dispatcher", "JSONRPCDispatcher", "_allocate_id", _note_id
            )
            self._wrap_optional("mcp.client.stdio", None, "_create_platform_compatible_process", _note_stdio)
            self._wrap_optional(
                "mcp.client.streamable_http", "StreamableHTTPTransport", "__init__", _note_http
            )
            return True

    def uninstrument(self) -> None:
        """Put the SDK's methods back; calls made afterwards are not traced."""
        with self._lock:
            for owner, attribute, original in reversed(self._patched):
                setattr(owner, attribute, original)
            self._patched.clear()

    def _wrap(self, owner: Any, attribute: str, wrapper: Callable[[Any], Any]) -> None:
        original = owner.__dict__[attribute]
        setattr(owner, attribute, functools.wraps(original)(wrapper(original)))
        self._patched.append((owner, attribute, original))

    def _wrap_optional(
        self, module: str, owner: str | None, attribute: str, wrapper: Callable[[Any], Any]
    ) -> None:
        """Wrap a private helper (of ``module``, or of its class ``owner``) when this mcp version
        has it: without it a span only lacks one detail (the request id, the transport)."""
        import importlib

        try:
            found: Any = importlib.import_module(module)
            if owner is not None:
                found = getattr(found, owner)
        except (ImportError, AttributeError):
            return
        if callable(getattr(found, "__dict__", {}).get(attribute)):
            self._wrap(found, attribute, wrapper)

    # -- the spans ---------------------------------------------------------------------------

    def _call_tool(self, original: Callable[..., Any]) -> Callable[..., Any]:
        integration = self

        async def call_tool(session: Any, name: str, arguments: Any = None, *args: Any, **kwargs: Any) -> Any:
            try:
                merged = _framework_tool_span(trace.get_current_span(), name)
            except Exception:  # a span of another kind: ours goes under it
                merged = None
            span = merged or integration._tracer.start_span(
                f"execute_tool {name}",
                kind=SpanKind.CLIENT,
                attributes={"gen_ai.operation.name": "execute_tool"},
            )
            _safely(integration._describe, span, session, name, arguments, merged is not None)
            holder = _RequestId()
            token = _request.set(holder)
            try:
                if merged is None:
                    with trace.use_span(span, end_on_exit=False, record_exception=False):
                        result = await original(session, name, arguments, *args, **kwargs)
                else:
                    result = await original(session, name, arguments, *args, **kwargs)
            except BaseException as exc:
                _request.reset(token)
                _failed(span, exc, holder, own=merged is None)
                raise
            _request.reset(token)
            _safely(integration._finished, span, result, holder, merged is not None)
            if merged is None:
                span.end()
            return result

        return call_tool

    def _list_tools(self, original: Callable[..., Any]) -> Callable[..., Any]:
        integration = self

        async def list_tools(session: Any, *args: Any, **kwargs: Any) -> Any:
            span = integration._tracer.start_span(
                TOOLS_LIST, kind=SpanKind.CLIENT, attributes={"mcp.method.name": TOOLS_LIST}
            )
            _safely(_transport, span, session)
            holder = _RequestId()
            token = _request.set(holder)
            try:
                with trace.use_span(span, end_on_exit=False, record_exception=False):
                    result = await original(session, *args, **kwargs)
            except BaseException as exc:
                _request.reset(token)
                _failed(span, exc, holder, own=True)
                raise
            _request.reset(token)
            _set_request_id(span, holder)
            span.end()
            return result

        return list_tools

    def _describe(self, span: Span, session: Any, name: str, arguments: Any, merged: bool) -> None:
        """What is known before the call: the method, the tool, the transport, the arguments."""
        if not span.is_recording():
            return
        span.set_attribute("mcp.method.name", TOOL_CALL)
        span.set_attribute("gen_ai.tool.name", name)
        _transport(span, session)
        if not merged:
            span.set_attribute("gen_ai.tool.type", "extension")
        if arguments is not None and self._writes_content(span, merged, "gen_ai.tool.call.arguments"):
            span.set_attribute("gen_ai.tool.call.arguments", captured_text(arguments))

    def _writes_content(self, span: Span, merged: bool, key: str) -> bool:
        """Whether the tool's arguments or result go on ``span``: when tracesim captures for
        MCP, on its own span; on a framework's, only where no capture setting of that
        framework's governs it (an integration traced through tracesim records its tool content
        itself, as its own ``capture`` says: a framework whose content was kept out stays so)."""
        if not captures(self.capture):
            return False
        if not merged:
            return True
        scope = getattr(getattr(span, "instrumentation_scope", None), "name", "") or ""
        return not scope.startswith(_CONTENT_GOVERNED) and not _has(span, key)

    def _finished(self, span: Span, result: Any, holder: _RequestId, merged: bool) -> None:
        """The result on the span: an ``isError`` result is the tool's error."""
        if not span.is_recording():
            return
        _set_request_id(span, holder)
        if getattr(result, "is_error", False):
            span.set_attribute("error.type", "tool_error")
            span.set_status(Status(StatusCode.ERROR, "tool_error"))  # the text is content: not here
        if self._writes_content(span, merged, "gen_ai.tool.call.result"):
            text = _text_of(result)
            if text is not None:
                span.set_attribute("gen_ai.tool.call.result", captured_text(text))


def _safely(write: Callable[..., None], *args: Any) -> None:
    """Write on a span; a failure here is logged, never raised into the application's tool call."""
    try:
        write(*args)
    except Exception:
        _log.debug("tracesim could not describe an MCP call", exc_info=True)


def _framework_tool_span(span: Span, name: str) -> Span | None:
    """The current span when it already stands for this tool call, else None.

    A framework that runs MCP tools opens a tool span of its own before calling the session
    (the OpenAI Agents SDK's and pydantic-ai's ``execute_tool <name>``, tracesim's
    ``@trace(kind="tool")``, fastmcp's ``tools/call <name>``): the MCP details go on it, so the
    run counts one tool call.
    """
    if not span.is_recording():
        return None
    attributes: Mapping[str, Any] = getattr(span, "attributes", None) or {}
    span_name = str(getattr(span, "name", ""))
    tool = attributes.get("gen_ai.tool.name", attributes.get("tool.name"))
    is_tool = attributes.get("gen_ai.operation.name") == "execute_tool" or attributes.get(
        "openinference.span.kind"
    ) in ("TOOL", "tool")
    if is_tool and (tool == name or (tool is None and span_name == f"execute_tool {name}")):
        return span
    is_mcp_call = attributes.get("mcp.method.name") == TOOL_CALL or span_name == f"{TOOL_CALL} {name}"
    if is_mcp_call and (tool in (None, name)) and span_name.endswith(f" {name}"):
        return span
    return None


# Scopes of the instrumentations whose tool spans follow a capture setting of their own in
# tracesim (tracesim's functions, its Agents SDK processor, pydantic-ai's output as tracesim turns
# it on, the OpenTelemetry GenAI instrumentations tracesim drives).
_CONTENT_GOVERNED = ("tracesim", "pydantic-ai", "opentelemetry.instrumentation.genai")


def _has(span: Span, key: str) -> bool:
    attributes = getattr(span, "attributes", None)
    return isinstance(attributes, Mapping) and key in attributes


def _transport(span: Span, session: Any) -> None:
    """Where the session's server is: a pipe (stdio), or an HTTP endpoint and its MCP session."""
    transport = getattr(session, _TRANSPORT_ATTRIBUTE, None)
    if transport is None or not span.is_recording():
        return
    if isinstance(transport, str):
        span.set_attribute("network.transport", transport)
        return
    span.set_attribute("network.transport", "tcp")
    span.set_attribute("network.protocol.name", "http")
    from urllib.parse import urlsplit

    url = urlsplit(str(getattr(transport, "url", "")))
    if url.hostname:  # host and port only: never the URL's credentials, path or query
        span.set_attribute("server.address", url.hostname)
        port = url.port or {"http": 80, "https": 443}.get(url.scheme)
        if port is not None:
            span.set_attribute("server.port", port)
    session_id = getattr(transport, "session_id", None)
    if isinstance(session_id, str) and session_id:
        span.set_attribute("mcp.session.id", session_id)


def _set_request_id(span: Span, holder: _RequestId) -> None:
    if holder.value is not None and span.is_recording():
        span.set_attribute("jsonrpc.request.id", str(holder.value))


def _failed(span: Span, exc: BaseException, holder: _RequestId, *, own: bool) -> None:
    """The call raised: a JSON-RPC error's code (else the exception's type) on the span.

    The exception itself goes on unchanged: the wrapper re-raises it after this.
    """
    try:
        if span.is_recording():
            _set_request_id(span, holder)
            from mcp.shared.exceptions import MCPError

            code = exc.code if isinstance(exc, MCPError) else None
            if code is not None:
                span.set_attribute("rpc.response.status_code", str(code))
            span.set_attribute("error.type", str(code) if code is not None else type(exc).__qualname__)
            span.set_status(Status(StatusCode.ERROR, type(exc).__qualname__))
            if own:
                span.record_exception(exc)
    except Exception:  # never in the way of the user's exception
        _log.debug("could not describe a failed MCP call", exc_info=True)
    finally:
        if own:
            span.end()


def _text_of(result: Any) -> str | None:
    """A tool result as text: its text blocks joined, else its structured content as JSON."""
    content = getattr(result, "content", None)
    texts = [block.text for block in content or () if isinstance(getattr(block, "text", None), str)]
    if texts:
        return "\n".join(texts)
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        return json.dumps(structured, default=str)
    return None


# -- the helpers that feed the span ----------------------------------------------------------


def _note_id(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def _allocate_id(dispatcher: Any) -> Any:
        allocated = original(dispatcher)
        holder = _request.get()
        if holder is not None and holder.value is None:  # the call's own request, sent first
            holder.value = allocated
        return allocated

    return _allocate_id


def _note_stdio(original: Callable[..., Any]) -> Callable[..., Any]:
    async def _create_platform_compatible_process(*args: Any, **kwargs: Any) -> Any:
        process = await original(*args, **kwargs)
        _opened_transport.set("pipe")  # stdio_client runs in its caller's context: the session sees it
        return process

    return _create_platform_compatible_process


def _note_http(original: Callable[..., None]) -> Callable[..., None]:
    def __init__(transport: Any, *args: Any, **kwargs: Any) -> None:
        original(transport, *args, **kwargs)
        _opened_transport.set(transport)  # made in streamable_http_client, in its caller's context

    return __init__


def _remember_transport(original: Callable[..., None]) -> Callable[..., None]:
    def __init__(session: Any, *args: Any, **kwargs: Any) -> None:
        original(session, *args, **kwargs)
        transport = _opened_transport.get()
        if transport is not None:
            _opened_transport.set(None)  # one transport, one session
            with contextlib.suppress(AttributeError):  # a class with __slots__: no transport on its spans
                setattr(session, _TRANSPORT_ATTRIBUTE, transport)

    return __init__
