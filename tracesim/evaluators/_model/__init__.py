"""Calling models for evaluators: one event loop, retries with a budget, rate limits, a disk cache.

Model-backed evaluators (`SemanticSimilarity` with an OpenAI-compatible backend, the LLM
judges) send their requests through a `ModelCaller`. All calls run on one private event loop
thread, whatever thread or loop asked for them: the scoring pipeline's loop, a worker thread
of ``tracesim eval``, or user code calling ``evaluate()``. One loop means one HTTP client and
one rate limiter per endpoint, shared by every evaluator that talks to it.

Every request is bounded as a whole by ``request_timeout_s`` (a body sent a byte at a time
included) and its body by ``max_response_bytes``; retries stop at the deadline of the
evaluation that asked for them (``timeout_s``, through `evaluation_deadline`).

A call is never traced: instrumentation is suppressed for it (any OpenTelemetry
instrumentation of the ``openai`` client or of ``httpx`` that honours the standard key stays
quiet), and tracesim's own pipeline drops any span started inside it.

Example:
    >>> settings = ModelSettings("text-embedding-3-small", base_url="http://127.0.0.1:8000/v1", rpm=600)
    >>> ModelCaller(settings).settings.rpm
    600
"""

from tracesim.evaluators._model._caller import (
    ModelCaller,
    ModelCallError,
    ModelSettings,
    Usage,
    evaluation_deadline,
)
from tracesim.evaluators._model._loop import in_model_call, run_sync, submit
from tracesim.evaluators._model._response import default_max_bytes

__all__ = [
    "ModelCallError",
    "ModelCaller",
    "ModelSettings",
    "Usage",
    "default_max_bytes",
    "evaluation_deadline",
    "in_model_call",
    "run_sync",
    "submit",
]
