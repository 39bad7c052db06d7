"""Settings: one table, resolved once into a frozen object.

Precedence, for every setting: the argument to `tracesim.configure()` > the environment
(``TRACESIM_*`` first, then the standard ``OTEL_*`` variable where one exists) > the
config file (``tracesim.yaml`` in the working directory, or ``TRACESIM_CONFIG_FILE``) >
the default. Every value is validated here, so a bad value fails at ``configure()`` with the
setting's name, where the value came from (``configure(NAME=...)``, the environment variable,
or the config file by the name it was given) and what is accepted; nothing on a hot path reads
the environment. A rule's relative ``golden:`` path in the config file is read from the file's
folder; paths given to ``configure()`` are read from the working directory.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tracesim._config import _parsers as parse
from tracesim._config._parsers import FileRule
from tracesim._errors import ConfigError, did_you_mean
from tracesim._pricing import Price, PriceError, parse_prices
from tracesim._redact import PATTERN_GROUPS

__all__ = ["SETTINGS", "FileRule", "Redactor", "Settings", "resolve", "resolve_setting"]

EXPORTER_NAMES = parse.EXPORTER_NAMES
REDACT_PATTERNS = PATTERN_GROUPS
SCORING_MODES = ("background", "inline", "off")
INTERNAL_ERRORS = ("log", "raise")
OTLP_PROTOCOLS = ("http/protobuf", "grpc")
EXPORT_ON_FULL = ("drop", "wait")


class Redactor(Protocol):
    """A hook that rewrites captured text before it leaves the process.

    Called with the text and the attribute it is for (``input.value``, ``output.value``,
    ``tracesim.expected.value``, ...); returns the text to record.
    """

    def __call__(self, value: str, attribute: str, /) -> str: ...


INTEGRATIONS = ("openai", "anthropic", "langchain", "pydantic_ai", "openai_agents", "litellm", "mcp")
# The entry-point group integrations register in (tracesim.instrumentation.ENTRY_POINT_GROUP)
INTEGRATIONS_GROUP = "tracesim.integrations"
"""Libraries `configure(instrument=...)` can trace."""


@dataclass(frozen=True)
class Settings:
    """Resolved configuration. Built by `resolve`; see `SETTINGS` for each field's meaning."""

    service_name: str | None = None
    enabled: bool = True
    exporters: tuple[Any, ...] = ("jsonl",)
    jsonl_path: str = ".tracesim/traces.jsonl"
    jsonl_max_bytes: int = 64 * 1024 * 1024
    jsonl_backups: int = 5
    otlp_protocol: str = "http/protobuf"
    otlp_endpoint: str | None = None
    otlp_headers: Mapping[str, str] | None = None
    spool_dir: str | None = ".tracesim/spool"
    spool_max_bytes: int = 256 * 1024 * 1024
    batch_export: bool = True
    export_queue_size: int | None = None  # None: 2,048, plus scoring_queue_size while scoring
    export_on_full: str = "drop"
    export_wait_s: float = 1.0
    resource_attributes: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    set_global_tracer_provider: bool = True
    capture: bool = True
    max_value_chars: int = 32 * 1024
    max_generator_items: int = 1000
    redact: Redactor | None = None
    redact_patterns: tuple[str, ...] = REDACT_PATTERNS
    scoring_mode: str = "background"
    evaluation_sample_rate: float = 1.0
    max_defer_s: float = 30.0
    scoring_queue_size: int = 10_000
    scoring_workers: int = 2
    scoring_processes: int | str = "auto"
    scoring_export: str = "auto"
    evaluation_log_events: bool | None = None
    evaluation_span_events: bool = True
    evaluators: tuple[Mapping[str, Any], ...] = ()
    phoenix_annotations: bool | None = None
    phoenix_annotations_url: str | None = None
    mlflow_experiment_id: str | None = None
    mlflow_assessments: bool | None = None
    mlflow_url: str | None = None
    metrics: tuple[str, ...] | None = None  # None: as the span exporters (otlp, jsonl)
    metrics_interval_s: float = 60.0
    prometheus_host: str = "localhost"
    prometheus_port: int = 9464
    shutdown_timeout_s: float = 10.0
    internal_errors: str = "log"
    instrument: tuple[str, ...] = ()
    prices: Mapping[str, Price] = dataclasses.field(default_factory=dict)


# ---------------------------------------------------------------- the table


@dataclass(frozen=True)
class Setting:
    """One row of the settings table."""

    name: str
    parse: Callable[[Any], Any]
    accepted: str
    doc: str
    env: tuple[str, ...] = ()
    in_file: bool = True
    from_file: Callable[[Any, str], Any] | None = None
    """Applied to a parsed value read from a config file, with the file's name: for values
    that depend on where the file is (a rule's relative ``golden:`` path)."""


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "service_name",
        parse.text,
        "a non-empty string",
        "service.name of every span",
        ("TRACESIM_SERVICE_NAME", "OTEL_SERVICE_NAME"),
    ),
    Setting(
        "enabled",
        parse.boolean,
        "true or false",
        "false makes every traced function run untouched",
        ("TRACESIM_ENABLED",),
    ),
    Setting(
        "exporters",
        parse.exporters,
        "a list of 'jsonl', 'console', 'otlp' or SpanExporter objects; 'none'",
        "where spans go (default: 'otlp' when OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT is set, else 'jsonl')",
        ("TRACESIM_EXPORTERS",),
    ),
    Setting("jsonl_path", parse.text, "a file path", "the local trace file", ("TRACESIM_JSONL_PATH",)),
    Setting(
        "jsonl_max_bytes",
        parse.integer(1024),
        "an integer >= 1024",
        "rotate the local file past this size",
        ("TRACESIM_JSONL_MAX_BYTES",),
    ),
    Setting(
        "jsonl_backups",
        parse.integer(0),
        "an integer >= 0",
        "rotated local files kept",
        ("TRACESIM_JSONL_BACKUPS",),
    ),
    Setting(
        "otlp_protocol",
        parse.choice(OTLP_PROTOCOLS),
        " or ".join(OTLP_PROTOCOLS),
        "OTLP transport",
        ("TRACESIM_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"),
    ),
    Setting(
        "otlp_endpoint",
        parse.http_url,
        "an http:// or https:// URL",
        "OTLP endpoint (default: the OTEL_EXPORTER_OTLP_* variables)",
    ),
    Setting(
        "otlp_headers", parse.headers, "a mapping of header names to values", "extra OTLP request headers"
    ),
    Setting(
        "spool_dir",
        parse.optional_path,
        "a directory path, or 'none' to disable",
        "where OTLP batches wait while the backend is unreachable",
        ("TRACESIM_SPOOL_DIR",),
    ),
    Setting(
        "spool_max_bytes",
        parse.integer(1024),
        "an integer >= 1024",
        "spool size bound (oldest dropped first)",
        ("TRACESIM_SPOOL_MAX_BYTES",),
    ),
    Setting(
        "batch_export",
        parse.boolean,
        "true or false",
        "false exports each span as it ends (serverless, tests)",
        ("TRACESIM_BATCH_EXPORT",),
    ),
    Setting(
        "export_queue_size",
        parse.integer(1),
        "an integer >= 1",
        "finished spans each exporter's queue holds (default 2048, plus scoring_queue_size while "
        "evaluators score in the background), and evaluation log records each log queue holds; a full "
        "span queue drops or waits (export_on_full), and counts; a full log queue drops, and counts",
        ("TRACESIM_EXPORT_QUEUE_SIZE", "OTEL_BSP_MAX_QUEUE_SIZE"),
    ),
    Setting(
        "export_on_full",
        parse.choice(EXPORT_ON_FULL),
        " or ".join(EXPORT_ON_FULL),
        "when an export queue is full: drop the span (counted), or make the caller wait for room, "
        "at most export_wait_s, then drop it (counted)",
        ("TRACESIM_EXPORT_ON_FULL",),
    ),
    Setting(
        "export_wait_s",
        parse.number(0.0),
        "a number >= 0",
        "longest a caller waits for room in a full export queue with export_on_full=wait; after a "
        "wait runs out, callers drop at once until the exporter takes a batch again",
        ("TRACESIM_EXPORT_WAIT_S",),
    ),
    Setting(
        "resource_attributes",
        parse.mapping,
        "a mapping of attribute names to values",
        "extra resource attributes (OTEL_RESOURCE_ATTRIBUTES is honoured too)",
    ),
    Setting(
        "set_global_tracer_provider",
        parse.boolean,
        "true or false",
        "install tracesim's TracerProvider as the global one when none is set",
        ("TRACESIM_SET_GLOBAL_TRACER_PROVIDER",),
    ),
    Setting(
        "capture",
        parse.boolean,
        "true or false",
        "record inputs, outputs and expected outputs",
        ("TRACESIM_CAPTURE",),
    ),
    Setting(
        "max_value_chars",
        parse.integer(64),
        "an integer >= 64",
        "longer captured values are cut with a marker",
        ("TRACESIM_MAX_VALUE_CHARS",),
    ),
    Setting(
        "max_generator_items",
        parse.integer(0),
        "an integer >= 0",
        "yielded items kept as a generator's output",
        ("TRACESIM_MAX_GENERATOR_ITEMS",),
    ),
    Setting(
        "redact",
        parse.callable_or_none,
        "a callable (value, attribute) -> str",
        "your redaction hook",
        in_file=False,
    ),
    Setting(
        "instrument",
        parse.integration_names(INTEGRATIONS, INTEGRATIONS_GROUP),
        f"a list of {', '.join(INTEGRATIONS)} or the name of an installed integration "
        f"(registered under the {INTEGRATIONS_GROUP} entry points), or 'none'",
        "libraries and agent frameworks whose calls become spans (each needs its extra: tracesim[mcp]...)",
        ("TRACESIM_INSTRUMENT",),
    ),
    Setting(
        "redact_patterns",
        parse.names_of(REDACT_PATTERNS),
        f"a list of {', '.join(REDACT_PATTERNS)}, or 'none'",
        "built-in redaction patterns",
        ("TRACESIM_REDACT_PATTERNS",),
    ),
    Setting(
        "scoring_mode",
        parse.choice(SCORING_MODES),
        ", ".join(SCORING_MODES),
        "background: score off the caller's path; inline: before returning; off",
        ("TRACESIM_SCORING_MODE",),
    ),
    Setting(
        "evaluation_sample_rate",
        parse.number(0.0, 1.0),
        "a number from 0 to 1",
        "share of traces scored (times each evaluator's own sample_rate)",
        ("TRACESIM_EVALUATION_SAMPLE_RATE",),
    ),
    Setting(
        "max_defer_s",
        parse.number(0.0),
        "a number >= 0",
        "longest a span waits for its scores before ending",
        ("TRACESIM_MAX_DEFER_S",),
    ),
    Setting(
        "scoring_queue_size",
        parse.integer(1),
        "an integer >= 1",
        "pending scoring jobs before new ones are dropped",
        ("TRACESIM_SCORING_QUEUE_SIZE",),
    ),
    Setting(
        "scoring_workers",
        parse.integer(1),
        "an integer >= 1",
        "threads running CPU evaluators",
        ("TRACESIM_SCORING_WORKERS",),
    ),
    Setting(
        "scoring_processes",
        parse.count_or_auto,
        "an integer >= 0 or auto",
        "worker processes running the CPU evaluators they can rebuild (0: threads only; auto: one, "
        "started once evaluators use more than 5% of a core)",
        ("TRACESIM_SCORING_PROCESSES",),
    ),
    Setting(
        "scoring_export",
        parse.choice(("auto", "workers", "host")),
        "auto, workers or host",
        "who writes a call scored in a worker process: that worker (the host only hands the ended "
        "span over) or the host; auto: the worker, where the configuration allows it",
        ("TRACESIM_SCORING_EXPORT",),
    ),
    Setting(
        "evaluation_log_events",
        parse.boolean_or_auto,
        "true, false or auto",
        "each result also as an OTLP log record named gen_ai.evaluation.result (auto: over OTLP, "
        "until the backend says it takes no logs)",
        ("TRACESIM_EVALUATION_LOG_EVENTS",),
    ),
    Setting(
        "evaluation_span_events",
        parse.boolean,
        "true or false",
        "each result as a gen_ai.evaluation.result event on the evaluated span",
        ("TRACESIM_EVALUATION_SPAN_EVENTS",),
    ),
    Setting(
        "evaluators",
        parse.rules,
        "a list of rules {match: ..., kind: ..., evaluators: [...]}",
        "attach evaluators to spans selected by name and kind",
        from_file=parse.rules_from_file,
    ),
    Setting(
        "phoenix_annotations",
        parse.boolean_or_auto,
        "true, false or auto",
        "results as Phoenix span annotations (auto: when the OTLP/HTTP endpoint answers as Phoenix)",
        ("TRACESIM_PHOENIX_ANNOTATIONS",),
    ),
    Setting(
        "phoenix_annotations_url",
        parse.optional_http_url,
        "a Phoenix base URL (http:// or https://), or 'none'",
        "where Phoenix annotations go when spans do not reach Phoenix over OTLP/HTTP",
        ("TRACESIM_PHOENIX_ANNOTATIONS_URL",),
    ),
    Setting(
        "mlflow_experiment_id",
        parse.numeric_id,
        "an MLflow experiment id (an integer, e.g. 0 for Default)",
        "the MLflow experiment spans go to: sent as the x-mlflow-experiment-id OTLP header",
        ("TRACESIM_MLFLOW_EXPERIMENT_ID", "MLFLOW_EXPERIMENT_ID"),
    ),
    Setting(
        "mlflow_assessments",
        parse.boolean_or_auto,
        "true, false or auto",
        "results as MLflow assessments (auto: when the OTLP/HTTP endpoint answers as MLflow)",
        ("TRACESIM_MLFLOW_ASSESSMENTS",),
    ),
    Setting(
        "mlflow_url",
        parse.optional_http_url,
        "an MLflow tracking server URL (http:// or https://), or 'none'",
        "where MLflow assessments go when spans do not reach MLflow over OTLP/HTTP",
        ("TRACESIM_MLFLOW_URL",),
    ),
    Setting(
        "metrics",
        parse.names_of(("otlp", "prometheus", "jsonl")),
        "a list of otlp, prometheus, jsonl, or 'none'",
        "where OpenTelemetry metrics go (default: as the spans: otlp beside them, jsonl beside the "
        "trace file)",
        ("TRACESIM_METRICS",),
    ),
    Setting(
        "metrics_interval_s",
        parse.number(0.01),
        "a number >= 0.01",
        "seconds between metric exports (otlp, jsonl); Prometheus reads them on each scrape",
        ("TRACESIM_METRICS_INTERVAL_S",),
    ),
    Setting(
        "prometheus_host",
        parse.text,
        "a host name or address",
        "where the Prometheus scrape endpoint listens",
        ("TRACESIM_PROMETHEUS_HOST", "OTEL_EXPORTER_PROMETHEUS_HOST"),
    ),
    Setting(
        "prometheus_port",
        parse.integer(0),
        "an integer >= 0 (0: any free port)",
        "port of the Prometheus scrape endpoint",
        ("TRACESIM_PROMETHEUS_PORT", "OTEL_EXPORTER_PROMETHEUS_PORT"),
    ),
    Setting(
        "shutdown_timeout_s",
        parse.number(0.0),
        "a number >= 0",
        "time allowed to drain at exit (scoring gets 70 %; the rest sends and closes)",
        ("TRACESIM_SHUTDOWN_TIMEOUT_S",),
    ),
    Setting(
        "prices",
        parse_prices,
        "a mapping of model names to {input: X, output: Y, cached_input: Z} in USD per 1M tokens",
        "prices of models, merged over the shipped OpenAI table; cost of LLM calls in exports and reports",
    ),
    Setting(
        "internal_errors",
        parse.choice(INTERNAL_ERRORS),
        "log or raise",
        "what tracesim does with its own bugs (raise is for tracesim's tests)",
        ("TRACESIM_INTERNAL_ERRORS",),
    ),
)


def resolve(
    arguments: Mapping[str, Any],
    environ: Mapping[str, str] | None = None,
    config_file: str | os.PathLike[str] | None = None,
) -> Settings:
    """Merge arguments, environment, config file and defaults into validated `Settings`.

    Arguments whose value is ``None`` count as not given. A bad value raises naming where it
    came from: the argument (``configure(scoring_workers=...)``), the environment variable,
    or the config file.

    Raises:
        ConfigError: a value is invalid, or the config file is unreadable or has unknown keys.

    Example:
        >>> try:
        ...     resolve({"scoring_workers": 0}, environ={})
        ... except ConfigError as exc:
        ...     print(exc.setting, exc.source)
        scoring_workers configure(scoring_workers=...)
    """
    environ = os.environ if environ is None else environ
    file_values, file_name = _read_file(config_file, environ)
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        found = _pick(setting, arguments, environ, file_values, file_name)
        if found is not None:
            values[setting.name] = _parse(setting, *found)
    if "exporters" not in values:
        otlp = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        values["exporters"] = ("otlp",) if otlp else ("jsonl",)
    return Settings(**values)


def resolve_setting(
    name: str,
    config_file: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Any:
    """One setting, from the environment, the config file or its default.

    For commands that need a single setting (``tracesim report`` and ``show`` read
    ``prices``): a value they do not use, such as an exporter the command line could not
    build, does not stop them.

    Raises:
        ConfigError: the value is invalid, or the config file is unreadable or has unknown keys.

    Example:
        >>> resolve_setting("prices", environ={})  # no tracesim.yaml here: the default
        {}
    """
    environ = os.environ if environ is None else environ
    setting = next(s for s in SETTINGS if s.name == name)
    file_values, file_name = _read_file(config_file, environ)
    found = _pick(setting, {}, environ, file_values, file_name)
    if found is None:
        return getattr(Settings(), name)
    return _parse(setting, *found)


@dataclass(frozen=True)
class _Origin:
    """Where a value came from: one of ``configure(NAME=...)``, an environment variable, a file."""

    argument: str | None = None
    env_var: str | None = None
    file: str | None = None  # as the user named it: tracesim.yaml, or TRACESIM_CONFIG_FILE's value

    @property
    def source(self) -> str | None:
        """The message's ``from ...``; an environment variable is named by ``env_var`` instead."""
        return f"configure({self.argument}=...)" if self.argument else self.file


def _parse(setting: Setting, raw: Any, origin: _Origin) -> Any:
    try:
        value = setting.parse(raw)
    except (ValueError, TypeError) as exc:
        # a price error names the model and field, not just the setting
        name, bad, accepted = (
            (exc.setting, exc.value, exc.accepted)
            if isinstance(exc, PriceError)
            else (setting.name, raw, setting.accepted)
        )
        raise ConfigError(name, bad, accepted, env_var=origin.env_var, source=origin.source) from None
    if origin.file is not None and setting.from_file is not None:
        value = setting.from_file(value, origin.file)
    return value


def _pick(
    setting: Setting,
    arguments: Mapping[str, Any],
    environ: Mapping[str, str],
    file_values: Mapping[str, Any],
    file_name: str,
) -> tuple[Any, _Origin] | None:
    """The raw value of ``setting`` and where it came from, by precedence; None when unset."""
    if arguments.get(setting.name) is not None:
        return arguments[setting.name], _Origin(argument=setting.name)
    for var in setting.env:
        if environ.get(var, "").strip():
            return environ[var], _Origin(env_var=var)
    if setting.name in file_values:
        return file_values[setting.name], _Origin(file=file_name)
    return None


def _read_file(
    config_file: str | os.PathLike[str] | None, environ: Mapping[str, str]
) -> tuple[Mapping[str, Any], str]:
    """The config file's mapping and its name as messages give it (``""`` when there is none)."""
    from_env = environ.get("TRACESIM_CONFIG_FILE") if not config_file else None
    explicit = config_file or from_env
    path = Path(explicit) if explicit else Path("tracesim.yaml")
    if not path.exists():
        if explicit:
            env_var = "TRACESIM_CONFIG_FILE" if from_env else None
            raise ConfigError("config_file", str(path), "an existing YAML file", env_var=env_var)
        return {}, ""
    from tracesim import _inputs

    try:  # within the input limits: size, nesting, YAML aliases
        data = _inputs.load_yaml(_inputs.read_text(path), str(path))
    except (OSError, _inputs.InputError) as exc:
        raise ConfigError("config_file", str(path), f"a readable YAML mapping ({exc})") from None
    if data is None:
        return {}, str(path)
    if not isinstance(data, Mapping):
        raise ConfigError("config_file", str(path), "a YAML mapping of setting names to values")
    allowed = sorted(s.name for s in SETTINGS if s.in_file)
    for key in data:
        if key not in allowed:
            accepted = f"setting names: {', '.join(allowed)}{did_you_mean(key, allowed)}"
            raise ConfigError("config_file", key, accepted, source=str(path))
    return data, str(path)
