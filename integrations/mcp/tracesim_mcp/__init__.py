"""tracesim's MCP integration: every tool call an MCP client makes, a tool span with its content.

Installed with ``pip install 'tracesim[mcp]'`` (or ``pip install tracesim-mcp``) and turned on
with ``tracesim.instrument_mcp()`` or ``configure(instrument=["mcp"])``, which find `integration`
through the ``tracesim.integrations`` entry point.

Each ``ClientSession.call_tool`` of the ``mcp`` SDK (2.x) becomes an ``execute_tool <name>``
span under the current span, in the OpenTelemetry GenAI conventions for MCP:
``gen_ai.operation.name=execute_tool``, ``gen_ai.tool.name``, ``mcp.method.name=tools/call``,
``jsonrpc.request.id``, ``network.transport=pipe`` for a server over stdio (``tcp`` with
``server.address`` / ``server.port`` and ``mcp.session.id`` over streamable HTTP), and, when tracesim
captures values, the arguments and the result (``gen_ai.tool.call.arguments`` / ``.result``,
the result's text blocks, else its structured content), bounded and redacted like every
captured value. A result the server marks ``isError`` sets ``error.type=tool_error`` and an
error status; a JSON-RPC error sets its code; the exception itself reaches the caller as it was.
``list_tools`` is a ``tools/list`` span. The request id is written as ``jsonrpc.request.id``,
never as ``gen_ai.tool.call.id``: that is the model's id for the call, by which a run pairs
a model's request with the step that executed it (with content off, by id alone).

When a framework already opened a tool span for the call (the OpenAI Agents SDK, pydantic-ai,
tracesim's ``@trace(kind="tool")``), the MCP details go on that span instead of a second one,
so the run counts one tool call, as the conventions ask.

Why its own wrapper rather than an existing instrumentation (evaluated for mcp 2.3):

- the SDK's own OpenTelemetry spans (``MCP send tools/call <name>``) carry the method and the
  request id only: no arguments, no result, no GenAI operation; they go through the global
  tracer provider and stay in the trace as transport spans, which runs do not count as tools;
- OpenInference's ``openinference-instrumentation-mcp`` propagates context and makes no span;
- OpenLLMetry's ``opentelemetry-instrumentation-mcp`` fails the import of mcp 2.3.

Example:
    >>> import tracesim
    >>> tracesim.instrument_mcp()  # doctest: +SKIP
    True
"""

from __future__ import annotations

from tracesim_mcp._client import MCPIntegration

__all__ = ["MCPIntegration", "integration"]

integration = MCPIntegration()
"""The switch tracesim's ``instrument_mcp()`` / ``uninstrument_mcp()`` turn."""
