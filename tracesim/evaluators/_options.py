"""Validation of evaluator options: wrong values raise ConfigError at construction."""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any, TypeVar

from tracesim._errors import ConfigError

__all__ = ["check_bool", "check_choice", "check_int", "check_number", "require_number"]

_T = TypeVar("_T")


def check_number(
    setting: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    allow_none: bool = False,
) -> float | None:
    """Return ``value`` as a float if it is a finite number within the bounds."""
    if value is None and allow_none:
        return None
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value <= high
    if not ok:
        raise ConfigError(setting, value, _describe_range(low, high, low_open, allow_none))
    return float(value)


def require_number(
    setting: str, value: Any, *, low: float | None = None, high: float | None = None, low_open: bool = False
) -> float:
    """Like :func:`check_number`, for settings that cannot be None."""
    number = check_number(setting, value, low=low, high=high, low_open=low_open)
    assert number is not None
    return number


def _describe_range(low: float | None, high: float | None, low_open: bool, allow_none: bool) -> str:
    parts = ["a number"]
    if low is not None and high is not None:
        parts.append(f"{'>' if low_open else '>='} {low:g} and <= {high:g}")
    elif low is not None:
        parts.append(f"{'>' if low_open else '>='} {low:g}")
    text = " ".join(parts)
    return f"{text}, or null" if allow_none else text


def check_int(setting: str, value: Any, *, low: int = 0, allow_none: bool = False) -> int | None:
    """Return ``value`` if it is an int ``>= low`` (or None when allowed)."""
    if value is None and allow_none:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= low:
        return value
    accepted = f"an integer >= {low}" + (", or null" if allow_none else "")
    raise ConfigError(setting, value, accepted)


def check_bool(setting: str, value: Any) -> bool:
    """Return ``value`` if it is a bool."""
    if isinstance(value, bool):
        return value
    raise ConfigError(setting, value, "true or false")


def check_choice(setting: str, value: Any, choices: Collection[_T]) -> _T:
    """Return ``value`` if it is one of ``choices``."""
    if value in choices:
        return value  # type: ignore[no-any-return]
    raise ConfigError(setting, value, "one of " + ", ".join(repr(c) for c in choices))
