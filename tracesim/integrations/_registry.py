"""The integrations `configure(instrument=[...])` and ``TRACESIM_INSTRUMENT`` can turn on, by name."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tracesim.integrations._anthropic import instrument_anthropic
from tracesim.integrations._langchain import instrument_langchain
from tracesim.integrations._openai import instrument_openai

__all__ = ["INSTRUMENTORS", "instrument"]

INSTRUMENTORS: dict[str, Callable[[], bool]] = {
    "openai": instrument_openai,
    "anthropic": instrument_anthropic,
    "langchain": instrument_langchain,
}
"""Each integration's name (the tracesim extra to install) -> the function that turns it on."""


def instrument(names: Sequence[str]) -> None:
    """Turn on the named integrations (they stay on); an unknown name is a bug of the caller.

    Raises:
        MissingIntegrationError: an integration's extra is not installed.

    Example:
        >>> instrument([])  # nothing named: nothing turned on
    """
    for name in names:
        INSTRUMENTORS[name]()
