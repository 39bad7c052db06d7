"""Validation of evaluator options: wrong values raise ConfigError at construction."""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any, TypeVar

from tracesim._errors import ConfigError

__all__ = [
    "check_bool",
    "check_choice",
    "check_int",
    "check_max_chars",
    "check_number",
    "check_threshold",
    "require_number",
]

_T = TypeVar("_T")


def _finite(value: Any) -> float | None:
    """``value`` as a float when it is a finite real number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int beyond the float range, e.g. 10**400
        return None
    return number if math.isfinite(number) else None


def _shown(value: Any) -> Any:
    """``value``, or a description of it when its repr would fail (ints above 4,300 digits)."""
    if isinstance(value, int):
        try:
            repr(value)
        except ValueError:
            return f"<an int of {value.bit_length()} bits>"
    return value


def check_number(
    setting: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    allow_none: bool = False,
) -> float | None:
    """Return ``value`` as a float if it is a finite number within the bounds.

    Example:
        >>> check_number("rouge.recall_threshold", 1, low=0.0, high=1.0)
        1.0
        >>> try:
        ...     check_number("jaccard.threshold", 10**400)
        ... except ConfigError as exc:
        ...     print(exc.setting, "accepts", exc.accepted)
        jaccard.threshold accepts a number
    """
    if value is None and allow_none:
        return None
    number = _finite(value)
    ok = number is not None
    if number is not None and low is not None:
        ok = number > low if low_open else number >= low
    if ok and number is not None and high is not None:
        ok = number <= high
    if not ok or number is None:
        raise ConfigError(setting, _shown(value), _describe_range(low, high, low_open, allow_none))
    return number


def require_number(
    setting: str, value: Any, *, low: float | None = None, high: float | None = None, low_open: bool = False
) -> float:
    """Like :func:`check_number`, for settings that cannot be None."""
    number = check_number(setting, value, low=low, high=high, low_open=low_open)
    assert number is not None
    return number


def check_threshold(
    setting: str, value: Any, score_range: tuple[float, float], *, allow_none: bool = True
) -> float | None:
    """Return ``value`` as a float if it is a finite number inside ``score_range`` (inclusive).

    An infinite end of the range is no bound; a threshold must still be finite.

    Example:
        >>> check_threshold("levenshtein.threshold", 1, (0.0, 1.0))
        1.0
        >>> try:
        ...     check_threshold("levenshtein.threshold", 7, (0.0, 1.0))
        ... except ConfigError as exc:
        ...     print(exc.accepted)
        a number >= 0 and <= 1, or null
    """
    low, high = score_range
    return check_number(
        setting,
        value,
        low=low if math.isfinite(low) else None,
        high=high if math.isfinite(high) else None,
        allow_none=allow_none,
    )


def _describe_range(
    low: float | None, high: float | None, low_open: bool = False, allow_none: bool = False
) -> str:
    """The accepted values of a number setting, in words.

    Example:
        >>> _describe_range(0, None, low_open=True, allow_none=True)
        'a number > 0, or null'
    """
    parts = ["a number"]
    if low is not None:
        parts.append(f"{'>' if low_open else '>='} {low:g}")
    if high is not None:
        parts.append(f"{'and ' if low is not None else ''}<= {high:g}")
    text = " ".join(parts)
    return f"{text}, or null" if allow_none else text


def check_int(setting: str, value: Any, *, low: int = 0, allow_none: bool = False) -> int | None:
    """Return ``value`` if it is an int ``>= low`` (or None when allowed)."""
    if value is None and allow_none:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= low:
        return value
    accepted = f"an integer >= {low}" + (", or null" if allow_none else "")
    raise ConfigError(setting, _shown(value), accepted)


def check_max_chars(type_name: str, value: Any) -> int | None:
    """Validate an evaluator's ``max_chars`` input cap: an int >= 1, or None for no cap.

    Example:
        >>> check_max_chars("rouge", 100_000), check_max_chars("rouge", None)
        (100000, None)
    """
    return check_int(f"{type_name}.max_chars", value, low=1, allow_none=True)


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
