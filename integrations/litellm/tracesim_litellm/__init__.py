"""tracesim's LiteLLM integration: every LiteLLM completion and embedding call a span.

Installed with ``pip install 'tracesim[litellm]'`` (or ``pip install tracesim-litellm``) and
turned on with ``tracesim.instrument_litellm()`` or ``configure(instrument=["litellm"])``,
which find `integration` through the ``tracesim.integrations`` entry point.

Each call is a ``chat <model>`` span (GenAI semantic conventions, as the OpenAI integration's):
``gen_ai.provider.name`` and ``gen_ai.request.model`` from LiteLLM's routing
(``openai/gpt-4o-mini`` is provider ``openai``, model ``gpt-4o-mini``, so tracesim prices it),
the response id and model, finish reasons, token usage, errors (status ERROR, ``error.type``;
the exception reaches the caller as LiteLLM raised it), streams sync and async (token counts
when the provider sends them, e.g. with ``stream_options={"include_usage": True}``), and,
when tracesim captures content, the messages, the tool definitions and the answer with its
tool calls, bounded and redacted like every captured value. ``litellm.embedding`` /
``aembedding`` calls are ``embeddings <model>`` spans (dimensions, input tokens). LiteLLM's
``Router`` calls the same entry points, so its calls are spans too.

Which instrumentation it builds on, and why: tracesim's own, small instrumentor
(``tracesim_litellm._instrumentor``) on ``opentelemetry-util-genai``, the library the
OpenTelemetry project's GenAI instrumentations (OpenAI, Anthropic, LangChain) share. The
candidates, evaluated on LiteLLM 1.110:

- LiteLLM's own OpenTelemetry callback (``litellm.callbacks = ["otel"]``): rejected. Outside
  its proxy it writes a call's attributes onto the *caller's* current span instead of a span
  of its own, starts streamed calls as new root spans (their parent lost), and exports through
  its own exporter, configured from environment variables.
- OpenLLMetry's ``opentelemetry-instrumentation-litellm``: content recording is switched by an
  environment variable only (tracesim's ``capture`` must work from code and per
  integration), and its spans are named ``litellm.chat`` with the provider prefix left in the
  model name.
- OpenInference's ``openinference-instrumentation-litellm``: no ``gen_ai.*`` attributes at all
  (tracesim reads OpenInference too, but every other integration speaks GenAI conventions).
- util-genai: the completion hook carries the content, so ``capture`` means what it means for
  the OpenAI integration, with one redaction path; and a LiteLLM call inside another util-genai
  inference (an Agents SDK ``LitellmModel``, say) is folded into that span, not counted twice.

Where it patches: the public functions on the ``litellm`` module. There is no single function
underneath them to patch instead: LiteLLM 1.110 dispatches a call either to its Python
implementation (``litellm.main``) or to a native (Rust) one, so a wrapper below the public
function would miss calls. What follows: ``from litellm import completion`` run *before*
tracesim instruments keeps the original function, and those calls are not traced. Call
``configure(instrument=["litellm"])`` before such an import, or write ``import litellm`` and
``litellm.completion(...)``, which always finds the current function.

What it costs: ``benchmarks/bench_framework_litellm.py`` times a tool loop (two model calls, one
tool) bare, with this integration (content captured) and with OpenInference's. Either adds
less than the run-to-run noise to a run of about 10 ms of CPU: in two runs of five rounds on a
quiet machine this integration added 0.15 and -0.06 ms per run, OpenInference's 1.45 and 0.44
ms (on a loaded machine the noise is a few milliseconds either way).

LiteLLM downloads its price list when imported, unless ``LITELLM_LOCAL_MODEL_COST_MAP=True`` is
set first; tracesim does not set it (tracesim prices calls from its own table).

Example:
    >>> import tracesim
    >>> tracesim.instrument_litellm(capture=False)  # doctest: +SKIP
    True
"""

from __future__ import annotations

import importlib
from typing import Any

from tracesim.instrumentation import GenAIIntegration

__all__ = ["integration"]


def _load() -> Any:
    importlib.import_module("litellm")  # not installed: ImportError, which names the extra
    from tracesim_litellm._instrumentor import LiteLLMInstrumentor

    return LiteLLMInstrumentor


integration = GenAIIntegration("litellm", _load)
"""The switch tracesim's ``instrument_litellm()`` / ``uninstrument_litellm()`` turn."""
