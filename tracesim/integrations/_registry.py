"""Finding an installed integration by name, through the ``tracesim.integrations`` entry points.

Each integration is its own distribution (``tracesim-openai``, ...), installed with the extra of
the same name (``pip install 'tracesim[openai]'``), which registers an `Integration` under
`ENTRY_POINT_GROUP`. `find` looks it up on first use and keeps it; nothing here reads package
metadata before an integration is asked for, so ``import tracesim`` stays cheap.
`configure(instrument=[...])` and ``TRACESIM_INSTRUMENT`` come through `instrument`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import cast

from tracesim._config import INTEGRATIONS
from tracesim.instrumentation import ENTRY_POINT_GROUP, Integration, MissingIntegrationError

__all__ = ["INSTRUMENTORS", "find", "instrument", "uninstrument"]

_lock = threading.Lock()
_found: dict[str, Integration] = {}


def _installed(name: str) -> Integration | None:
    """The integration registered as ``name``, or None when no distribution registers it."""
    from importlib.metadata import entry_points  # read when an integration is first asked for

    for entry_point in entry_points(group=ENTRY_POINT_GROUP, name=name):
        try:
            loaded = entry_point.load()
        except ImportError as exc:  # registered, yet it or what it needs cannot be imported
            raise MissingIntegrationError(name) from exc
        return cast(Integration, loaded)
    return None


def find(name: str) -> Integration:
    """The installed integration called ``name`` (its extra's name), loaded once.

    Raises:
        MissingIntegrationError: no installed distribution registers it.

    Example:
        >>> try:
        ...     find("nothing")
        ... except MissingIntegrationError as exc:
        ...     print(exc)
        tracesim's nothing integration needs its extra: pip install 'tracesim[nothing]'
    """
    with _lock:
        found = _found.get(name)
        if found is None:
            found = _installed(name)
            if found is None:
                raise MissingIntegrationError(name)
            _found[name] = found
        return found


def uninstrument(name: str) -> None:
    """Turn the integration ``name`` off; nothing to do when it is not installed (it was never on).

    Example:
        >>> uninstrument("no-such-library")
    """
    try:
        integration = find(name)
    except MissingIntegrationError:
        return
    integration.uninstrument()


def _instrumentor(name: str) -> Callable[[], bool]:
    def turn_on() -> bool:
        return find(name).instrument(None)

    turn_on.__doc__ = f"Turn the {name} integration on, following tracesim's capture setting."
    return turn_on


INSTRUMENTORS: dict[str, Callable[[], bool]] = {name: _instrumentor(name) for name in INTEGRATIONS}
"""Each integration's name (the tracesim extra to install) -> the function that turns it on."""


def instrument(names: Sequence[str]) -> None:
    """Turn on the named integrations (they stay on), each found by its entry point.

    Raises:
        MissingIntegrationError: an integration's extra is not installed.

    Example:
        >>> instrument([])  # nothing named: nothing turned on
    """
    for name in names:  # tracesim's own, or one another distribution registers
        find(name).instrument(None)
