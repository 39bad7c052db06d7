"""AgentTest's ``.agenttest/config.yaml``: the evaluators, weights, judge model and test limits.

Only what ``@agent_test`` uses is read: ``evaluators`` (``name``, ``type``, ``config``,
``weight``, ``enabled``), ``llm`` (``provider``, ``model``, ``api_key``, ``api_base``,
``temperature``, ``max_tokens``: the LLM judge's model) and ``testing`` (``timeout``,
``retry_count``). Everything else (``logging``, ``agents``...) is AgentTest's CLI's business
and is ignored; a value of the wrong type in what is read raises `tracesim.ConfigError`
naming the file and the key.

Example:
    >>> config = parse({"evaluators": [{"name": "similarity", "type": "string_similarity",
    ...                                 "config": {"method": "jaccard"}, "weight": 0.5}]})
    >>> kind, entry = config.evaluator_for("similarity")
    >>> kind, entry.config, config.weight("similarity")
    ('similarity', {'method': 'jaccard'}, 0.5)
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracesim import ConfigError, plugin_support

__all__ = [
    "CRITERIA",
    "TYPES",
    "AgentTestConfig",
    "EvaluatorEntry",
    "LLMSettings",
    "find",
    "load",
    "parse",
]

CRITERIA: dict[str, str] = {
    "similarity": "similarity",
    "string_similarity": "similarity",
    "contains": "contains",
    "regex": "regex",
    "metrics": "metrics",
    "metric": "metric",
    "llm_judge": "llm_judge",
}
"""AgentTest's criteria -> the evaluator each runs (``string_similarity`` is an alias)."""
TYPES: dict[str, str] = {
    **CRITERIA,
    "contains_check": "contains",
    "regex_pattern": "regex",
    "nlp_metrics": "metrics",
    "llm_as_judge": "llm_judge",
}
"""Evaluator entry ``type:`` values -> the evaluator (with the type names of AgentTest's documentation)."""
DEFAULT_TIMEOUT_S = 300.0
"""AgentTest's ``testing.timeout`` default, in seconds."""
_RELATIVE = Path(".agenttest", "config.yaml")


@dataclass(frozen=True)
class EvaluatorEntry:
    """One item of the ``evaluators:`` list."""

    name: str
    type: str
    config: Mapping[str, Any] = field(default_factory=dict)
    weight: float = 1.0
    enabled: bool = True


@dataclass(frozen=True)
class LLMSettings:
    """The ``llm:`` section: the LLM judge's provider and model (unset values are None)."""

    provider: str | None = None
    model: str | None = None
    api_key: str | None = None
    api_base: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None

    def judge_config(self, entry_config: Mapping[str, Any]) -> dict[str, Any]:
        """The judge's config: the entry's, with this section's settings over it, as AgentTest merges them.

        ``max_tokens`` is the entry's if it has one (AgentTest reads only the entry's).

        Example:
            >>> LLMSettings("openai", "gpt-4o").judge_config({"criteria": ["clarity"], "model": "gpt-4"})
            {'criteria': ['clarity'], 'model': 'gpt-4o', 'provider': 'openai'}
        """
        merged = dict(entry_config)
        for key in ("provider", "model", "api_key", "api_base", "temperature"):
            value = getattr(self, key)
            if value is not None:
                merged[key] = value
        if self.max_tokens is not None:
            merged.setdefault("max_tokens", self.max_tokens)
        return merged


@dataclass(frozen=True)
class AgentTestConfig:
    """The parts of an AgentTest configuration that ``@agent_test`` honours."""

    path: Path | None = None
    evaluators: tuple[EvaluatorEntry, ...] = ()
    timeout_s: float = DEFAULT_TIMEOUT_S
    retry_count: int = 0
    llm: LLMSettings = field(default_factory=LLMSettings)

    def entry(self, name: str) -> EvaluatorEntry | None:
        """The evaluator entry called ``name`` (AgentTest looks weights up this way)."""
        return next((e for e in self.evaluators if e.name == name), None)

    def evaluator_for(self, criterion: str) -> tuple[str, EvaluatorEntry | None] | None:
        """The evaluator a criterion runs (a `CRITERIA` value) and the entry whose config it uses.

        As AgentTest: a criterion of `CRITERIA` uses the first entry named or typed like the
        evaluator (``similarity`` for both similarity criteria). tracesim also lets a
        criterion name an entry whose type is one of `TYPES` (``{name: keywords, type:
        contains}``; AgentTest reports "not found" for it). None: no such evaluator.
        """
        kind = CRITERIA.get(criterion)
        if kind is not None:
            return kind, next((e for e in self.evaluators if kind in (e.name, e.type)), None)
        entry = self.entry(criterion)
        if entry is not None and entry.type in TYPES:
            return TYPES[entry.type], entry
        return None

    def weight(self, criterion: str) -> float:
        """The weight of a criterion in the overall score: its entry's, else 1.0."""
        entry = self.entry(criterion)
        return entry.weight if entry is not None else 1.0

    @property
    def origin(self) -> str:
        """Where the configuration came from, for messages."""
        return str(self.path) if self.path else f"AgentTest's defaults (no {_RELATIVE} found)"


def find(start: Path) -> Path | None:
    """The first ``.agenttest/config.yaml`` in ``start`` or a folder above it, then above the cwd.

    Example:
        >>> find(Path("/")) is None or find(Path("/")).name == "config.yaml"
        True
    """
    for base in (start, Path.cwd()):
        for folder in (base, *base.parents):
            candidate = folder / _RELATIVE
            if candidate.is_file():
                return candidate
    return None


def load(path: Path | None) -> AgentTestConfig:
    """Read and check the file at ``path`` (read again when it changes); None gives the defaults."""
    if path is None:
        return AgentTestConfig()
    stat = os.stat(path)
    return _load(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=64)
def _load(path: Path, mtime_ns: int, size: int) -> AgentTestConfig:
    """One file at one modification time: a suite of many tests reads its config once."""
    try:  # within the input limits: an alias bomb or a deep document is refused, not built
        data = plugin_support.read_yaml(path)
    except plugin_support.InputError as exc:
        problem = str(exc).splitlines()[0]
        raise ConfigError(
            "(file)", problem, "a YAML mapping of AgentTest settings", source=str(path)
        ) from None
    return parse(data, path)


def parse(data: Any, path: Path | None = None) -> AgentTestConfig:
    """Check a loaded configuration and keep what ``@agent_test`` uses."""
    source = str(path) if path else None
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError("(top level)", data, "a mapping of AgentTest settings", source=source)
    evaluators = data.get("evaluators") or []
    if not isinstance(evaluators, list):
        raise ConfigError("evaluators", evaluators, "a list of evaluator entries", source=source)
    entries = tuple(_entry(item, f"evaluators[{i}]", source) for i, item in enumerate(evaluators))
    testing = data.get("testing") or {}
    if not isinstance(testing, Mapping):
        raise ConfigError("testing", testing, "a mapping (timeout, retry_count...)", source=source)
    timeout = testing.get("timeout", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ConfigError("testing.timeout", timeout, "a number of seconds > 0", source=source)
    retry_count = testing.get("retry_count", 0)
    if isinstance(retry_count, bool) or not isinstance(retry_count, int) or retry_count < 0:
        raise ConfigError("testing.retry_count", retry_count, "an integer >= 0", source=source)
    return AgentTestConfig(path, entries, float(timeout), retry_count, _llm(data.get("llm"), source))


def _llm(section: Any, source: str | None) -> LLMSettings:
    if section is None:
        return LLMSettings()
    if not isinstance(section, Mapping):
        raise ConfigError("llm", section, "a mapping (provider, model, api_key...)", source=source)
    values: dict[str, Any] = {}
    for key in ("provider", "model", "api_key", "api_base"):
        value = section.get(key)
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"llm.{key}", value, "a string", source=source)
        values[key] = value
    temperature = section.get("temperature")
    if temperature is not None and (
        isinstance(temperature, bool) or not isinstance(temperature, (int, float))
    ):
        raise ConfigError("llm.temperature", temperature, "a number from 0 to 2", source=source)
    max_tokens = section.get("max_tokens")
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)):
        raise ConfigError("llm.max_tokens", max_tokens, "an integer", source=source)
    return LLMSettings(**values, temperature=temperature, max_tokens=max_tokens)


def _entry(item: Any, where: str, source: str | None) -> EvaluatorEntry:
    if not isinstance(item, Mapping):
        raise ConfigError(where, item, "a mapping with name, type, config, weight, enabled", source=source)
    for key in ("name", "type"):
        if not isinstance(item.get(key), str):
            raise ConfigError(f"{where}.{key}", item.get(key), "a string", source=source)
    config = item.get("config") or {}
    if not isinstance(config, Mapping):
        raise ConfigError(f"{where}.config", config, "a mapping of the evaluator's options", source=source)
    weight = item.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight < 0:
        raise ConfigError(f"{where}.weight", weight, "a number >= 0", source=source)
    enabled = item.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ConfigError(f"{where}.enabled", enabled, "true or false", source=source)
    return EvaluatorEntry(item["name"], item["type"], dict(config), float(weight), enabled)
