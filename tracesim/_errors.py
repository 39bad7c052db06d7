"""The exceptions tracesim raises into user code (only ever at configuration time)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracesim._redact import Redactor

__all__ = ["ConfigError", "TracesimError", "did_you_mean"]


class TracesimError(Exception):
    """Base class of every exception tracesim raises on purpose."""


class ConfigError(TracesimError, ValueError):
    """A setting has a value tracesim cannot use.

    Raised by `tracesim.configure()`, by decorators and by evaluator constructors, never
    while traced code runs. The message names the setting, where it can be set and what is
    accepted, so the fix is in the message.

    Example:
        >>> import tracesim
        >>> try:
        ...     tracesim.configure(max_value_chars=-1)
        ... except tracesim.ConfigError as exc:
        ...     print(exc.setting)
        max_value_chars
    """

    def __init__(
        self,
        setting: str,
        value: Any,
        accepted: str,
        *,
        env_var: str | None = None,
        source: str | None = None,
    ) -> None:
        self.setting = setting
        self.value = value
        self.accepted = accepted
        self.env_var = env_var
        self.source = source
        where = f" (environment variable {env_var})" if env_var else ""
        origin = f" from {source}" if source else ""
        # The message is printed and logged: a key given where a name was due must not show.
        # The built-in patterns, not the settings' (reading them may raise this very error).
        shown = _redacted(repr(value))
        super().__init__(
            f"invalid value for setting {setting!r}{where}: got {shown}{origin}; accepted: {accepted}"
        )


def _redacted(text: str) -> str:
    from tracesim._redact import Redactor

    global _REDACTOR  # built at the first error: importing tracesim need not compile the rules
    if _REDACTOR is None:
        _REDACTOR = Redactor()
    return _REDACTOR.redact(text, "tracesim.error")


_REDACTOR: Redactor | None = None


def did_you_mean(given: object, known: Sequence[str]) -> str:
    """``"; did you mean 'levenshtein'?"`` for a misspelt name close to one of ``known``, else ``""``.

    Example:
        >>> did_you_mean("levenshtien", ["exact", "levenshtein"])
        "; did you mean 'levenshtein'?"
    """
    if not isinstance(given, str):
        return ""
    import difflib

    close = difflib.get_close_matches(given, list(known), n=1, cutoff=0.75)
    return f"; did you mean {close[0]!r}?" if close else ""
