"""Parsers for setting values: each takes what a user passed (argument, environment text or
YAML value) and returns the clean value, or raises ``ValueError``; `tracesim._config` turns
that into a `ConfigError` naming the setting and what it accepts."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

EXPORTER_NAMES = ("jsonl", "console", "otlp")


def boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("1", "true", "yes", "on"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError


def boolean_or_auto(value: Any) -> bool | None:
    """``true``/``false`` as `boolean`; ``auto`` (or None) leaves the choice to tracesim."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "auto"):
        return None
    return boolean(value)


def integer(low: int) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        if isinstance(value, bool):
            raise ValueError
        number = int(value) if isinstance(value, (int, str)) else None
        if number is None or number < low:
            raise ValueError
        return number

    return parse


def count_or_auto(value: Any) -> int | str:
    """An integer >= 0, or ``auto`` (tracesim decides)."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    return integer(0)(value)


def number(low: float, high: float | None = None, *, open_low: bool = False) -> Callable[[Any], float]:
    def parse(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ValueError
        number = float(value)
        if number != number or number < low or (open_low and number == low):
            raise ValueError
        if high is not None and number > high:
            raise ValueError
        return number

    return parse


def choice(options: Sequence[str]) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        if not isinstance(value, str) or value.strip().lower() not in options:
            raise ValueError
        return value.strip().lower()

    return parse


def text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError
    return value.strip()


def http_url(value: Any) -> str:
    """An ``http://`` or ``https://`` URL with a host."""
    from urllib.parse import urlparse

    url = text(value)
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError
    return url


def optional_http_url(value: Any) -> str | None:
    """`http_url`, or None for ``none``/``off``/empty."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none", "off")):
        return None
    return http_url(value)


def numeric_id(value: Any) -> str:
    """A non-negative integer written as text (MLflow's experiment ids: ``"0"``, ``"417"``)."""
    if isinstance(value, bool):
        raise ValueError
    token = str(value).strip() if isinstance(value, (int, str)) else ""
    if not token.isdigit():
        raise ValueError
    return str(int(token))


def optional_path(value: Any) -> str | None:
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none", "off")):
        return None
    if isinstance(value, os.PathLike):
        return str(os.fspath(value))
    return text(value)


def names_of(options: Sequence[str]) -> Callable[[Any], tuple[str, ...]]:
    def parse(value: Any) -> tuple[str, ...]:
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)):
            raise ValueError
        names = tuple(str(i).strip().lower() for i in items if str(i).strip())
        if names in (("none",), ()):
            return ()
        if any(n not in options for n in names):
            raise ValueError
        return names

    return parse


def _builtin_name(name: str, builtin: Sequence[str]) -> str:
    normal = name.lower().replace("-", "_")
    return normal if normal in builtin else name


def integration_names(builtin: Sequence[str], group: str) -> Callable[[Any], tuple[str, ...]]:
    """Names of integrations: tracesim's own (``builtin``), or any name an installed distribution
    registers under the entry-point ``group`` (looked up only for a name not built in, so the
    common case reads no package metadata)."""

    def parse(value: Any) -> tuple[str, ...]:
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)):
            raise ValueError
        names = tuple(str(i).strip() for i in items if str(i).strip())
        if tuple(n.lower() for n in names) in (("none",), ()):
            return ()
        # tracesim's own by their name in any case, and with - for _ as pip writes extras
        names = tuple(_builtin_name(n, builtin) for n in names)
        unknown = [n for n in names if n not in builtin]
        if unknown:
            from importlib.metadata import entry_points

            registered = {entry_point.name for entry_point in entry_points(group=group)}
            if any(n not in registered for n in unknown):
                raise ValueError
        return names

    return parse


def exporters(value: Any) -> tuple[Any, ...]:
    from opentelemetry.sdk.trace.export import SpanExporter

    items = value.split(",") if isinstance(value, str) else value
    if isinstance(items, SpanExporter) or not isinstance(items, (list, tuple)):
        items = [items]
    result: list[Any] = []
    for item in items:
        if isinstance(item, SpanExporter):
            result.append(item)
        elif isinstance(item, str) and item.strip().lower() in (*EXPORTER_NAMES, "none", ""):
            if item.strip().lower() not in ("none", ""):
                result.append(item.strip().lower())
        else:
            raise ValueError
    return tuple(result)


def mapping(value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise ValueError
    return dict(value)


def headers(value: Any) -> Mapping[str, str] | None:
    if value is None:
        return None
    return {k: str(v) for k, v in mapping(value).items()}


def callable_or_none(value: Any) -> Any:
    if value is not None and not callable(value):
        raise ValueError
    return value


def rules(value: Any) -> tuple[Mapping[str, Any], ...]:
    if isinstance(value, Mapping) or not isinstance(value, (list, tuple)):
        raise ValueError
    if not all(isinstance(rule, Mapping) for rule in value):
        raise ValueError
    return tuple(dict(rule) for rule in value)


class FileRule(dict[str, Any]):
    """A rule of the ``evaluators`` setting that was read from a config file.

    It is the rule's mapping, plus the file it came from: error messages about the rule name
    that file, and a relative ``golden:`` path in it is read from the file's folder, as a path
    written in a file is read by anyone who opens the file.

    Example:
        >>> rule = FileRule({"evaluators": ["exact"]}, "conf/tracesim.yaml")
        >>> rule == {"evaluators": ["exact"]}, rule.file, rule.folder.name
        (True, 'conf/tracesim.yaml', 'conf')
    """

    def __init__(self, rule: Mapping[str, Any], file: str, folder: Path | None = None) -> None:
        super().__init__(rule)
        self.file = file
        # absolute now: a later chdir must not move the folder
        self.folder = folder or Path(file).absolute().parent

    def __reduce__(self) -> tuple[Any, ...]:  # a copy or a pickle keeps the file
        return (FileRule, (dict(self), self.file, self.folder))


def rules_from_file(value: tuple[Mapping[str, Any], ...], file: str) -> tuple[Mapping[str, Any], ...]:
    """The parsed rules of a config file, each remembering ``file`` (see `FileRule`)."""
    return tuple(FileRule(rule, file) for rule in value)
