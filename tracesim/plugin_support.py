"""What a plugin built on tracesim needs beyond the user's API: redacted outputs, safe text, bounded reading.

tracesim's integrations that live in their own distributions (``tracesim-pytest`` first) import
only tracesim's public API. This module is the part of it written for them, in one place so
that what tracesim promises to a plugin is a short list a test pins, and so that the user's
namespace (``tracesim.*``) stays the user's. Each name here forwards to the implementation the
core itself uses, so a plugin behaves exactly as a report of the core does:

- Outputs. Everything a plugin writes or prints, other than spans, is redacted as spans are
  (the running configuration's ``redact_patterns`` and ``redact`` hook, else those of
  ``tracesim.yaml`` and the environment): `redact_text`, `redact_data`, `redaction` (the
  redaction in force now, kept for later), `write_json` and `open_text`.
- Terminal-safe text: `visible` shows control characters and bidirectional overrides instead of
  obeying them, as ``tracesim show`` does.
- Bounded reading: `read_yaml` reads a configuration file within tracesim's input limits
  (size, depth, YAML aliases), raising `InputError`.
- Scoring: `build_evaluators` builds evaluators from what ``@tracesim.trace(evaluators=...)``
  takes; `to_jsonable` makes any value JSON data, as tracesim records it.
- Names: the attribute and event names tracesim writes evaluation results with
  (`EVALUATION_EVENT`, `EVALUATION_NAME`...), to read results back from spans.

Example:
    >>> from tracesim import plugin_support
    >>> plugin_support.redact_text("write to marie@curie.org")
    'write to [REDACTED:email]'
    >>> plugin_support.visible("ok\\x1b[2J")
    'ok␛[2J'
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from tracesim import _outputs
from tracesim._inputs import InputError
from tracesim._outputs import open_text, write_json
from tracesim._semconv import (
    ERROR_TYPE,
    EVALUATION_DETAILS,
    EVALUATION_DURATION,
    EVALUATION_EVENT,
    EVALUATION_EXPLANATION,
    EVALUATION_NAME,
    EVALUATION_PASSED,
    EVALUATION_SCORE_LABEL,
    EVALUATION_SCORE_VALUE,
    EVALUATION_STATUS,
    EVALUATION_THRESHOLD,
    EXPECTED_TOOL_CALLS,
    SPAN_KIND,
)
from tracesim._terminal import visible

if TYPE_CHECKING:
    from tracesim.evaluators import Evaluator

__all__ = [
    "ERROR_TYPE",
    "EVALUATION_DETAILS",
    "EVALUATION_DURATION",
    "EVALUATION_EVENT",
    "EVALUATION_EXPLANATION",
    "EVALUATION_NAME",
    "EVALUATION_PASSED",
    "EVALUATION_SCORE_LABEL",
    "EVALUATION_SCORE_VALUE",
    "EVALUATION_STATUS",
    "EVALUATION_THRESHOLD",
    "EXPECTED_TOOL_CALLS",
    "SPAN_KIND",
    "InputError",
    "build_evaluators",
    "open_text",
    "read_yaml",
    "redact_data",
    "redact_text",
    "redaction",
    "to_jsonable",
    "visible",
    "write_json",
]

T = TypeVar("T")


def redact_text(text: str) -> str:
    """``text`` with every secret replaced by the redaction in force. Never raises.

    Example:
        >>> redact_text("postgres://app:hunter2@localhost/db")
        'postgres://app:[REDACTED:password]@localhost/db'
    """
    return _outputs.text(text)


def redact_data(value: T) -> T:
    """A copy of a JSON-like ``value`` (mappings, lists, strings...) with every string and key redacted.

    Example:
        >>> redact_data({"error": "denied for marie@curie.org", "score": 0.5})
        {'error': 'denied for [REDACTED:email]', 'score': 0.5}
    """
    return _outputs.clean(value)


def redaction() -> Callable[[str], str]:
    """The redaction in force now, as a function of text: kept, it still applies after the configuration ends.

    A plugin that reports after a test's configuration is gone (a pytest fixture's capture,
    say) takes it while the configuration runs, and redacts its report with it later.

    Example:
        >>> redact = redaction()
        >>> redact("Bearer abcdef0123456789abcdef")
        'Bearer [REDACTED:token]'
    """
    redactor = _outputs.redactor()
    attribute = _outputs.ATTRIBUTE

    def redact(text: str) -> str:
        return redactor.redact(text, attribute)

    return redact


def read_yaml(path: str | os.PathLike[str]) -> Any:
    """The YAML document in the file at ``path``, read within tracesim's input limits.

    A file larger than the limit, nested too deep, or whose aliases expand past the budget (a
    "billion laughs" document) is refused, not built.

    Raises:
        OSError: the file cannot be read.
        InputError: over a limit, or not YAML; the message names the file and the line.

    Example:
        >>> import tempfile
        >>> from pathlib import Path
        >>> path = Path(tempfile.mkdtemp()) / "config.yaml"
        >>> _ = path.write_text("testing: {timeout: 60}")
        >>> read_yaml(path)
        {'testing': {'timeout': 60}}
    """
    from tracesim import _inputs

    return _inputs.load_yaml(_inputs.read_text(path), os.fspath(path))


def build_evaluators(specs: Any, where: str) -> tuple[Evaluator, ...]:
    """Evaluator objects from what ``@tracesim.trace(evaluators=...)`` takes.

    ``specs`` is one or a list of evaluator objects, config mappings (``{"type":
    "levenshtein", "threshold": 0.8}``) or spec strings (``"rouge:rouge_type=rouge1"``);
    ``where`` names the caller in error messages (``"<where>.evaluators"``).

    Raises:
        tracesim.ConfigError: an unknown type, a bad option, or two evaluators with one name.

    Example:
        >>> [e.name for e in build_evaluators(["levenshtein", {"type": "exact"}], "my_plugin")]
        ['levenshtein', 'exact']
    """
    from tracesim._scoring import build_evaluators as build

    return build(specs, where)


def to_jsonable(value: Any) -> Any:
    """``value`` as plain JSON data (dicts, lists, strings, numbers), as tracesim records values.

    Objects become what their type converts to (a Pydantic model its fields, a dataclass its
    fields, anything else its text); cycles and failing conversions become placeholders.

    Example:
        >>> to_jsonable({"score": float("nan"), "tags": ("a", "b")})
        {'score': 'nan', 'tags': ['a', 'b']}
    """
    from tracesim._capture import to_jsonable as convert

    return convert(value)
