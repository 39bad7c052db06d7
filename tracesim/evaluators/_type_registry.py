"""One registry of evaluator types, shared by YAML config, the CLI and user code."""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, overload

from tracesim._errors import ConfigError, did_you_mean
from tracesim.evaluators._base import _SHARED_KEYS, Evaluator

__all__ = ["available_types", "from_config", "parse_spec", "register", "unregister"]

Factory = Callable[..., Evaluator]
_F = TypeVar("_F", bound=Factory)

# Types announced but not built yet: their names are kept so configs fail with a clear message.
_PLANNED: dict[str, str] = {}

_lock = threading.Lock()
_factories: dict[str, Factory] = {}
_builtin_names: set[str] = set()


def _ensure_builtins() -> None:
    """Register the catalogue on first use (keeps ``import tracesim.evaluators`` cheap)."""
    if _builtin_names:
        return
    from tracesim.evaluators._builtin_types import BUILTIN_TYPES

    with _lock:
        for type_name, factory in BUILTIN_TYPES.items():
            _factories.setdefault(type_name, factory)
            _builtin_names.add(type_name)


@overload
def register(type_name: str, factory: _F, *, replace: bool = False) -> _F: ...


@overload
def register(type_name: str, factory: Evaluator, *, replace: bool = False) -> Evaluator: ...


@overload
def register(type_name: str, factory: None = None, *, replace: bool = False) -> Callable[[_F], _F]: ...


def register(
    type_name: str, factory: Factory | Evaluator | None = None, *, replace: bool = False
) -> Factory | Evaluator | Callable[[_F], _F]:
    """Add an evaluator type to the registry used by :func:`from_config` and the CLI.

    ``factory`` is an :class:`Evaluator` subclass or any callable taking the config's
    options as keywords; an evaluator *instance* (e.g. from ``@evaluator``) can be
    registered too, and then configs may set its shared options (``threshold``, ``name``,
    ...). Without ``factory`` it works as a class decorator. Built-in and planned type
    names cannot be replaced; other names only with ``replace=True``.

    Example:
        >>> from tracesim.evaluators import Evaluator, from_config, register, unregister
        >>> @register("starts_with")
        ... class StartsWith(Evaluator):
        ...     type_name = "starts_with"
        ...     def measure(self, output, expected, *, input=None):
        ...         return output.startswith(expected)
        >>> from_config({"type": "starts_with"}).evaluate("Paris!", "Paris").passed
        True
        >>> unregister("starts_with")
    """
    if factory is None:

        def decorate(fn: _F) -> _F:
            register(type_name, fn, replace=replace)
            return fn

        return decorate
    if not isinstance(type_name, str) or not type_name:
        raise ConfigError("type", type_name, "a non-empty string")
    _ensure_builtins()
    with _lock:
        if type_name in _builtin_names or type_name in _PLANNED:
            raise ConfigError("type", type_name, "a name that is not a built-in or planned type")
        if type_name in _factories and not replace:
            raise ConfigError("type", type_name, "a name not registered yet (or pass replace=True)")
        _factories[type_name] = factory.replace if isinstance(factory, Evaluator) else factory
    return factory


def unregister(type_name: str) -> None:
    """Remove a type added with :func:`register` (built-in types stay).

    Example:
        >>> from tracesim.evaluators import ExactMatch, available_types, register, unregister
        >>> _ = register("exact_ci", lambda **options: ExactMatch(case_sensitive=False, **options))
        >>> "exact_ci" in available_types()
        True
        >>> unregister("exact_ci")
        >>> "exact_ci" in available_types()
        False
    """
    _ensure_builtins()
    with _lock:
        if type_name in _builtin_names:
            raise ConfigError("type", type_name, "a type added with register(), not a built-in one")
        _factories.pop(type_name, None)


def available_types() -> list[str]:
    """The type names :func:`from_config` accepts, sorted.

    Example:
        >>> "levenshtein" in available_types()
        True
    """
    _ensure_builtins()
    return sorted(_factories)


def _accepted_options(factory: Factory) -> tuple[list[str], bool]:
    """Keyword options of ``factory`` and whether it takes the shared keys too."""
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return [], True
    names = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    # the flat connection keywords of the model-backed evaluators, taken through **keywords
    names += [key for key in getattr(factory, "_keyword_options", ()) if key not in names]
    takes_shared = any(p.kind is p.VAR_KEYWORD for p in params)
    return names, takes_shared


def from_config(config: Mapping[str, Any], *, source: str | None = None) -> Evaluator:
    """Build an evaluator from ``{"type": NAME, **options}``.

    Options are the evaluator's keyword arguments plus the shared ``name``, ``threshold``,
    ``sample_rate``, ``timeout_s``, ``max_concurrency`` and ``runs_in``. An unknown type, an unknown
    option or a bad value raises :class:`~tracesim.ConfigError` naming the setting and
    what is accepted; ``source`` (e.g. a file name) is quoted in that message.

    Example:
        >>> ev = from_config({"type": "levenshtein", "threshold": 0.8})
        >>> ev.name, ev.threshold
        ('levenshtein', 0.8)
    """
    if not isinstance(config, Mapping):
        raise ConfigError("evaluator", config, 'a mapping such as {"type": "levenshtein"}', source=source)
    options = dict(config)
    type_name = options.pop("type", None)
    _ensure_builtins()
    with _lock:
        factory = _factories.get(type_name) if isinstance(type_name, str) else None
        known = sorted(_factories)
    if factory is None:
        accepted = "one of " + ", ".join(known) + did_you_mean(type_name, known)
        if type_name in _PLANNED:
            accepted = (
                f"{type_name!r} ({_PLANNED[type_name]}) is planned but not available in this "
                f"version of tracesim; available types: " + ", ".join(known)
            )
        raise ConfigError("type", type_name, accepted, source=source)
    names, takes_shared = _accepted_options(factory)
    allowed = names + [k for k in _SHARED_KEYS if k not in names] if takes_shared else names
    for key in options:
        if key not in allowed:
            listing = ", ".join(allowed) or "none"
            accepted = f"options of {type_name!r}: {listing}{did_you_mean(key, allowed)}"
            raise ConfigError(f"{type_name}.{key}", options[key], accepted, source=source)
    try:
        return factory(**options)
    except ConfigError as exc:
        if source is None or exc.source is not None:
            raise
        raise ConfigError(exc.setting, exc.value, exc.accepted, env_var=exc.env_var, source=source) from None
    except TypeError as exc:
        raise ConfigError(
            type_name, options, f"valid options for {type_name!r} ({exc})", source=source
        ) from None


def parse_spec(spec: str) -> dict[str, Any]:
    """Parse ``"TYPE:key=value,key=value"`` (the CLI's ``-e`` syntax) into a config dict.

    Values are read as JSON when they parse (``0.8``, ``true``, ``null``, ``"x"``,
    ``[1, 2]``) and kept as strings otherwise. Commas inside brackets or quotes do not
    split.

    Example:
        >>> parse_spec("levenshtein:threshold=0.8,case_sensitive=true")
        {'type': 'levenshtein', 'threshold': 0.8, 'case_sensitive': True}
    """
    type_name, _, rest = spec.partition(":")
    type_name = type_name.strip()
    if not type_name:
        raise ConfigError(
            "evaluator", spec, "TYPE or TYPE:key=value,key=value (e.g. rouge:rouge_type=rouge1)"
        )
    config: dict[str, Any] = {"type": type_name}
    for item in _split_top_level(rest):
        key, eq, raw = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise ConfigError(f"{type_name} option", item, "key=value pairs separated by commas")
        config[key] = _parse_value(raw.strip())
    return config


def _parse_value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _split_top_level(text: str) -> list[str]:
    items: list[str] = []
    depth, quoted, start = 0, False, 0
    for i, char in enumerate(text):
        if char == '"' and (i == 0 or text[i - 1] != "\\"):
            quoted = not quoted
        elif not quoted and char in "[{":
            depth += 1
        elif not quoted and char in "]}":
            depth -= 1
        elif not quoted and depth == 0 and char == ",":
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return [item for item in items if item.strip()]
