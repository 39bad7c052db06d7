"""Which evaluators score a span: attached ones, configured rules, and sampling."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracesim._config import FileRule
from tracesim._errors import ConfigError
from tracesim._foreign_spans import KIND_OF_OPERATION
from tracesim._scoring._expect import NOT_SET, Golden
from tracesim.runs import Expected

__all__ = [
    "GENAI_OPERATIONS",
    "Plan",
    "Rule",
    "build_evaluators",
    "compile_rules",
    "sample_unit",
    "scores_runs",
    "suggestion",
]

_RULE_KEYS = ("match", "kind", "attributes", "evaluators", "expected")

GENAI_OPERATIONS = tuple(KIND_OF_OPERATION)
"""``gen_ai.operation.name`` values a rule's ``kind`` may name (OpenTelemetry GenAI conventions)."""


EVALUATORS_SEEN = False
"""True once any traced function or span was given evaluators: scoring can end spans in bursts."""


def evaluators_seen() -> bool:
    """Whether any traced function or span has been given evaluators yet (`EVALUATORS_SEEN`)."""
    return EVALUATORS_SEEN


def build_evaluators(specs: Sequence[Any], where: str) -> tuple[Any, ...]:
    """Evaluator objects from instances, config mappings or ``"type:option=value"`` strings.

    Raises:
        ConfigError: an unknown type, a bad option, or two evaluators with one name.
    """
    from tracesim.evaluators import Evaluator, from_config, parse_spec

    if isinstance(specs, (str, Mapping, Evaluator)):
        specs = [specs]
    evaluators: list[Any] = []
    for spec in specs:
        if isinstance(spec, Evaluator):
            evaluators.append(spec)
        elif isinstance(spec, Mapping):
            evaluators.append(from_config(spec))
        elif isinstance(spec, str):
            evaluators.append(from_config(parse_spec(spec)))
        else:
            raise ConfigError(
                f"{where}.evaluators", spec, "Evaluator objects, config mappings or 'type:opt=value'"
            )
    names = [e.name for e in evaluators]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(
            f"{where}.evaluators",
            duplicates,
            "evaluators with distinct names (pass name=... to tell them apart)",
        )
    if evaluators:
        global EVALUATORS_SEEN
        EVALUATORS_SEEN = True
    return tuple(evaluators)


@dataclass(frozen=True)
class Rule:
    """Attach ``evaluators`` to spans selected by name, kind and attributes.

    ``match`` is a glob on the span's name, or on the agent's or workflow's own name when the
    span records one (``gen_ai.agent.name``, ``agent.name``, ``gen_ai.workflow.name``): a
    framework names its spans ``invoke_agent weather`` or ``invoke_workflow LangGraph``, and
    ``match: weather`` selects the first. ``kind`` is a tracesim / OpenInference kind (``llm``,
    ``agent``...) or a GenAI operation (``chat``, ``embeddings``...): a span has both, its
    ``openinference.span.kind`` and its ``gen_ai.operation.name``, and either may match.
    ``attributes`` must all be on the span: strings are globs on the value's text, other values
    compare equal.

    Example:
        >>> rule = Rule("chat *", "llm", (), attributes=(("gen_ai.request.model", "gpt-4o*"),))
        >>> rule.selects("chat gpt-4o-mini", ("llm", "chat"), {"gen_ai.request.model": "gpt-4o-mini"})
        True
        >>> rule.selects("chat gpt-4o-mini", ("llm", "chat"), {"gen_ai.request.model": "o3"})
        False
        >>> graph = {"gen_ai.workflow.name": "LangGraph"}
        >>> Rule("LangGraph", None, ()).selects("invoke_workflow LangGraph", (), graph)
        True
    """

    match: str
    kind: str | None
    evaluators: tuple[Any, ...]
    expected: Any = NOT_SET
    attributes: tuple[tuple[str, Any], ...] = ()
    where: str = "evaluators"

    def selects(
        self, name: str, kinds: str | tuple[str | None, ...], attributes: Mapping[str, Any] | None = None
    ) -> bool:
        """Whether this rule applies to a span called ``name`` of kind(s) ``kinds``."""
        if self.kind is not None:
            if isinstance(kinds, str):
                kinds = (kinds,)
            if self.kind not in kinds:
                return False
        if self.match != "*" and not fnmatch.fnmatchcase(name, self.match):
            own = _own_name(attributes)
            if own is None or not fnmatch.fnmatchcase(own, self.match):
                return False
        if self.attributes:
            attributes = attributes or {}
            for key, wanted in self.attributes:
                if key not in attributes or not _same(attributes[key], wanted):
                    return False
        return True

    def describe(self) -> str:
        """The rule as a user wrote it, for messages."""
        parts = [f"match {self.match!r}"]
        if self.kind is not None:
            parts.append(f"kind {self.kind!r}")
        parts += [f"{key}={wanted!r}" for key, wanted in self.attributes]
        return f"{self.where} ({', '.join(parts)})"


_OWN_NAME_KEYS = ("gen_ai.agent.name", "agent.name", "gen_ai.workflow.name")
"""Where a span records the name of the agent or workflow it runs (GenAI, OpenInference)."""


def _own_name(attributes: Mapping[str, Any] | None) -> str | None:
    for key in _OWN_NAME_KEYS:
        value = (attributes or {}).get(key)
        if isinstance(value, str) and value:
            return value
    return None


def suggestion(rule: Rule, seen: Sequence[tuple[str, str]]) -> str | None:
    """A ``match`` that would have selected one of the spans ``seen`` (``(name, "kind/operation")``
    pairs) of the rule's kind, when ``rule``'s pattern is part of its name (``LangGraph`` of
    ``invoke_workflow LangGraph``); else None.

    Example:
        >>> seen = [("chat gpt-4o", "llm/chat"), ("invoke_workflow LangGraph", "chain")]
        >>> suggestion(Rule("langgraph", None, ()), seen)
        "match: '*LangGraph*' (it would select 'invoke_workflow LangGraph')"
        >>> suggestion(Rule("langgraph", "agent", ()), seen) is None
        True
    """
    plain = rule.match.strip("*?")
    if not plain or any(c in plain for c in "*?["):
        return None
    for name, kinds in seen:
        if rule.kind is not None and rule.kind not in kinds.split("/"):
            continue
        at = name.lower().find(plain.lower())
        if at >= 0:
            return f"match: '*{name[at : at + len(plain)]}*' (it would select {name!r})"
    return None


def _same(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, str):
        text = value if isinstance(value, str) else str(value)
        return text == wanted or fnmatch.fnmatchcase(text, wanted)
    if isinstance(wanted, bool) or isinstance(value, bool):
        return value is wanted
    return bool(value == wanted)


def compile_rules(rules: Sequence[Mapping[str, Any]]) -> tuple[Rule, ...]:
    """Validate the ``evaluators`` setting (from ``configure()`` or ``tracesim.yaml``).

    Each rule: ``{"match": "answer*", "kind": "agent", "attributes": {"tenant": "acme"},
    "evaluators": [...], "expected": ...}``; ``match`` (a glob on the span name, default
    ``*``), ``kind``, ``attributes`` and ``expected`` are optional. ``expected`` is one of:

    - ``{"golden": FILE, "key": ARGUMENT}`` (and `Golden`'s ``column``, ``expected_column``,
      ``tool_calls_column``): looked up per call. A relative FILE in a config file is read
      from that file's folder (the rule is a `FileRule`); given to ``configure()``, from the
      working directory.
    - ``{"output": VALUE, "tool_calls": [{"name": TOOL, "arguments": {...}}, ...]}`` (either
      key or both): a `tracesim.Expected`; tool calls are checked here, a bad one is a
      `ConfigError` naming it (``...expected.tool_calls[0].name``).
    - ``{"value": VALUE}``: VALUE, whatever it is (the way to write a mapping).
    - any other value that is not a mapping (``"Paris"``, ``42``, a list): that value, as
      the decorator's ``expected=`` takes it (from ``configure()``, a callable or a `Golden`
      too). Any other mapping is refused: ``{value: {...}}`` says what was meant.

    An error in a rule read from a file names the file.

    Example:
        >>> (rule,) = compile_rules([{"match": "answer*", "evaluators": ["exact"], "expected": "Paris"}])
        >>> rule.expected
        'Paris'
    """
    compiled = []
    for index, rule in enumerate(rules):
        source = rule.file if isinstance(rule, FileRule) else None
        try:
            compiled.append(_compile_rule(rule, f"evaluators[{index}]"))
        except ConfigError as exc:
            if source is None or exc.source is not None:
                raise
            raise ConfigError(
                exc.setting, exc.value, exc.accepted, env_var=exc.env_var, source=source
            ) from None
    return tuple(compiled)


def _compile_rule(rule: Mapping[str, Any], where: str) -> Rule:
    from tracesim._semconv import SPAN_KINDS

    unknown = sorted(set(rule) - set(_RULE_KEYS))
    if unknown:
        raise ConfigError(where, unknown[0], f"rule keys: {', '.join(_RULE_KEYS)}")
    kind = rule.get("kind")
    if kind is not None and (
        not isinstance(kind, str) or kind.lower() not in (*SPAN_KINDS, *GENAI_OPERATIONS)
    ):
        raise ConfigError(
            f"{where}.kind",
            kind,
            f"a span kind ({', '.join(SPAN_KINDS)}) or a GenAI operation ({', '.join(GENAI_OPERATIONS)})",
        )
    match = rule.get("match", "*")
    if not isinstance(match, str):
        raise ConfigError(f"{where}.match", match, "a glob pattern on span names, e.g. 'answer*'")
    if "evaluators" not in rule:
        raise ConfigError(f"{where}.evaluators", None, "a list of evaluators")
    folder = rule.folder if isinstance(rule, FileRule) else None
    return Rule(
        match,
        kind.lower() if kind else None,
        build_evaluators(rule["evaluators"], where),
        _expected_source(rule.get("expected"), f"{where}.expected", folder),
        _attribute_conditions(rule.get("attributes"), where),
        where,
    )


def _attribute_conditions(spec: Any, where: str) -> tuple[tuple[str, Any], ...]:
    if spec is None:
        return ()
    if not isinstance(spec, Mapping) or not all(isinstance(key, str) for key in spec):
        raise ConfigError(
            f"{where}.attributes",
            spec,
            "a mapping of attribute name to value, e.g. {gen_ai.request.model: 'gpt-4o*'}",
        )
    for key, value in spec.items():
        if not isinstance(value, (str, bool, int, float)):
            raise ConfigError(f"{where}.attributes.{key}", value, "a string (a glob), a number or true/false")
    return tuple(spec.items())


_EXPECTED_FORMS = (
    "a value such as 'Paris' or 42, {golden: FILE, key: ARGUMENT}, or {value: VALUE}; or what a run "
    "should do: {output: VALUE, tool_calls: [{name: TOOL, arguments: {...}}, ...]} (either or both)"
)
_EXPECTED_KEYS = frozenset({"output", "tool_calls"})


def _expected_source(spec: Any, where: str, folder: Path | None) -> Any:
    """What a rule's ``expected`` stands for; see `compile_rules`. ``folder`` reads relative golden paths."""
    if spec is None:
        return NOT_SET
    if not isinstance(spec, Mapping):
        return spec  # a plain value, as the decorator's expected= takes it
    if "golden" in spec:
        return _golden(spec, where, folder)
    if set(spec) == {"value"}:
        return spec["value"]
    if spec and set(spec) <= _EXPECTED_KEYS:
        return Expected.of(spec, where)  # bad tool calls: a ConfigError naming where.tool_calls[i]
    raise ConfigError(where, spec, f"{_EXPECTED_FORMS} (a mapping is written {{value: {{...}}}})")


def _golden(spec: Mapping[str, Any], where: str, folder: Path | None) -> Any:
    options = dict(spec)
    path, key = options.pop("golden"), options.pop("key", None)
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise ConfigError(f"{where}.golden", path, "the path of a JSONL or CSV file")
    if not isinstance(key, str):
        raise ConfigError(f"{where}.key", key, "the traced function's argument to look up")
    if folder is not None:
        path = folder / path  # an absolute path stays as it is
    try:
        return Golden(path, key, **options)
    except TypeError as exc:
        raise ConfigError(
            where, dict(spec), f"golden, key, column, expected_column, tool_calls_column ({exc})"
        ) from None
    except ConfigError as exc:
        raise ConfigError(f"{where}.golden", exc.value, exc.accepted) from None


@dataclass(frozen=True)
class Plan:
    """How a span is scored: its evaluators and where its expected output comes from, in order."""

    evaluators: tuple[Any, ...]
    sources: tuple[Any, ...]
    always: bool = False
    """Every evaluator has ``sample_rate`` 1: no sampling decision to make per call."""
    runs: bool = False
    """An evaluator scores the run (``scores_runs``): the span's subtree is kept until it is scored."""


def plan(
    attached: tuple[Any, ...],
    expected: Any,
    rules: Sequence[Rule],
    name: str,
    kind: str | tuple[str | None, ...],
    attributes: Mapping[str, Any] | None = None,
    matched: set[int] | None = None,
) -> Plan | None:
    """The scoring plan of a span, or None when nothing scores it.

    Evaluators attached in code come first and win a name clash with a rule's; the code's
    ``expected`` comes before a rule's. The index of every rule that selects the span is
    added to ``matched``.
    """
    evaluators = list(attached)
    names = {e.name for e in attached}
    sources = [expected] if expected is not NOT_SET else []
    for index, rule in enumerate(rules):
        if rule.selects(name, kind, attributes):
            if matched is not None:
                matched.add(index)
            for evaluator in rule.evaluators:
                if evaluator.name not in names:
                    evaluators.append(evaluator)
                    names.add(evaluator.name)
            if rule.expected is not NOT_SET:
                sources.append(rule.expected)
    if not evaluators:
        return None
    return Plan(
        tuple(evaluators),
        tuple(sources),
        all(e.sample_rate >= 1.0 for e in evaluators),
        any(scores_runs(e) for e in evaluators),
    )


def scores_runs(evaluator: Any) -> bool:
    """Whether ``evaluator`` scores a run (`tracesim.runs.Run`) rather than an output value."""
    return getattr(evaluator, "scores_runs", False) is True


_MASK64 = (1 << 64) - 1


def sample_unit(trace_id: int) -> float:
    """A number in [0, 1) fixed by the trace id: every span of a trace gets the same one.

    An evaluator with rate ``r`` scores a trace when this is below ``r``, so decisions are
    deterministic per trace and nested across rates (a trace scored at 10 % is also scored
    at 50 %). The id is mixed first (splitmix64), so the decision does not simply repeat a
    trace-id-ratio head sampler's.
    """
    x = ((trace_id >> 64) ^ trace_id) & _MASK64
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    x ^= x >> 31
    return x / 2.0**64
