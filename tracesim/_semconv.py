"""Every attribute, event and span name tracesim writes, in one place.

The GenAI names follow the OpenTelemetry GenAI semantic conventions (development status, now
maintained in open-telemetry/semantic-conventions-genai); the ``input.*``/``output.*`` and
``openinference.*`` names follow OpenInference, so Phoenix and Arize show the values natively.
The strings are kept here rather than imported, because the Python constants for ``gen_ai.*``
are marked deprecated upstream while the conventions move repositories.
"""

from __future__ import annotations

from typing import Final

# OpenInference
SPAN_KIND: Final = "openinference.span.kind"
INPUT_VALUE: Final = "input.value"
INPUT_MIME_TYPE: Final = "input.mime_type"
OUTPUT_VALUE: Final = "output.value"
OUTPUT_MIME_TYPE: Final = "output.mime_type"
PROJECT_NAME: Final = "openinference.project.name"

# OpenTelemetry GenAI
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
"""A tool span's arguments by name (JSON); tracesim's ``kind="tool"`` spans record it with their input."""
EVALUATION_EVENT: Final = "gen_ai.evaluation.result"
EVALUATION_NAME: Final = "gen_ai.evaluation.name"
EVALUATION_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
EVALUATION_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
EVALUATION_EXPLANATION: Final = "gen_ai.evaluation.explanation"
ERROR_TYPE: Final = "error.type"

# tracesim's own
EXPECTED_VALUE: Final = "tracesim.expected.value"
EXPECTED_MIME_TYPE: Final = "tracesim.expected.mime_type"
EXPECTED_TOOL_CALLS: Final = "tracesim.expected.tool_calls"
"""The tool calls a `tracesim.Expected` expects, as JSON: ``[{"name": ..., "arguments": {...}}, ...]``."""
INPUT_ORIGINAL_CHARS: Final = "tracesim.input.original_chars"
OUTPUT_ORIGINAL_CHARS: Final = "tracesim.output.original_chars"
EXPECTED_ORIGINAL_CHARS: Final = "tracesim.expected.original_chars"
OUTPUT_ITEMS: Final = "tracesim.output.items"
GENERATOR_CLOSED_EARLY: Final = "tracesim.generator.closed_early"
EVALUATION_PASSED: Final = "tracesim.evaluation.passed"
EVALUATION_THRESHOLD: Final = "tracesim.evaluation.threshold"
EVALUATION_DETAILS: Final = "tracesim.evaluation.details"
EVALUATION_STATUS: Final = "tracesim.evaluation.status"
EVALUATION_RUN: Final = "tracesim.evaluation.run"
"""True on a result of an evaluator that scored the span's run (its tool calls, trajectory, budget)."""
EVALUATION_DURATION: Final = "tracesim.evaluation.duration_s"
EVALUATION_NOT_SAMPLED: Final = "tracesim.evaluation.not_sampled"
EVALUATION_DROPPED: Final = "tracesim.evaluation.dropped"
EVALUATION_DEFERRED: Final = "tracesim.evaluation.deferred"
EVALUATION_ANNOTATOR_KIND: Final = "tracesim.evaluation.annotator_kind"

# tracesim's export queue: a span of its own that records how many spans a full queue dropped
# (tracesim._export_queue writes it, ``tracesim report`` sums it, ``show`` prints it as a note).
EXPORT_DROPPED: Final = "tracesim.export.dropped"  # the record span's name
EXPORT_DROPPED_SPANS: Final = "tracesim.export.dropped_spans"  # dropped since the last record
EXPORT_QUEUE_SIZE: Final = "tracesim.export.queue_size"
EXPORT_ON_FULL: Final = "tracesim.export.on_full"
EXPORT_EXPORTER: Final = "tracesim.export.exporter"

MIME_TEXT: Final = "text/plain"
MIME_JSON: Final = "application/json"


def eval_score(name: str) -> str:
    """Flat attribute holding evaluator ``name``'s score, for querying in backends."""
    return f"tracesim.eval.{name}.score"


def eval_label(name: str) -> str:
    """Flat attribute holding evaluator ``name``'s label."""
    return f"tracesim.eval.{name}.label"


def eval_passed(name: str) -> str:
    """Flat attribute holding whether evaluator ``name`` passed."""
    return f"tracesim.eval.{name}.passed"


def eval_status(name: str) -> str:
    """Flat attribute holding evaluator ``name``'s status when it is not ``ok`` (skipped, error)."""
    return f"tracesim.eval.{name}.status"


# kind= value -> (openinference.span.kind, gen_ai.operation.name or None, name attribute or None)
SPAN_KINDS: Final[dict[str, tuple[str, str | None, str | None]]] = {
    "agent": ("AGENT", "invoke_agent", GEN_AI_AGENT_NAME),
    "tool": ("TOOL", "execute_tool", GEN_AI_TOOL_NAME),
    "chain": ("CHAIN", None, None),
    "llm": ("LLM", None, None),
    "retriever": ("RETRIEVER", "retrieval", None),
    "embedding": ("EMBEDDING", "embeddings", None),
    "evaluator": ("EVALUATOR", None, None),
}

# Experiments (tracesim.experiments): attributes of each run's root span.
EXPERIMENT_NAME: Final = "tracesim.experiment.name"
EXPERIMENT_RUN_ID: Final = "tracesim.experiment.run_id"
EXPERIMENT_DATASET: Final = "tracesim.experiment.dataset"
EXPERIMENT_CASE_ID: Final = "tracesim.experiment.case_id"
EXPERIMENT_REPEAT: Final = "tracesim.experiment.repeat"
EXPERIMENT_METADATA: Final = "tracesim.experiment.metadata"

LLM_COUNTED_IN_PARENT: Final = "tracesim.llm.counted_in_parent"
"""True on an LLM call span directly inside another (a client library's own span under an
instrumentation's span of the same call): its tokens and cost are the parent's, so usage totals,
the OpenInference token counts added at export and evaluator rules leave it out."""

LLM_TWIN_OF: Final = "tracesim.llm.twin_of"
"""The span id (16 hex digits) of another instrumentation's span of the same model call, beside
this one rather than around it (two LangChain callback handlers, say): trace totals, the tree
and rules count the call once, there; a run counts this span when its twin is not in the run."""
