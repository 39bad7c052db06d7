"""The Prometheus scrape endpoint: one HTTP server per host and port, serving the active configuration.

Each configuration reads its metrics into a `CollectorRegistry` of its own (never
``prometheus_client``'s global one, so configuring again registers nothing twice). The HTTP
server outlives a re-configuration on the same host and port: ``configure()`` builds the new
configuration while the old one still runs, and both cannot listen on one port, so the server
is shared and switched to the new registry when the new configuration is installed. A new host
with the same port moves tracesim's own server there (`Endpoint.move`): the port is tracesim's,
not taken; it moves back if that configuration is never installed. It stops when no
configuration uses it any more (``shutdown()``, or a configuration without ``prometheus``).
"""

from __future__ import annotations

import errno
import logging
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from tracesim._errors import ConfigError

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from prometheus_client.metrics_core import Metric

__all__ = ["EXTRA", "Endpoint", "acquire", "missing_extra", "scrape_url"]

_logger = logging.getLogger("tracesim")
_lock = threading.Lock()
_endpoints: dict[tuple[str, int], Endpoint] = {}
_serving: Endpoint | None = None  # the endpoint of the active configuration, for `scrape_url`

EXTRA = "pip install 'tracesim[prometheus]'"


def missing_extra() -> ConfigError:
    """The error of ``metrics=["prometheus"]`` without the extra installed: it names the install command.

    Example:
        >>> print(missing_extra())  # doctest: +ELLIPSIS
        invalid value for setting 'metrics': got 'prometheus'; accepted: otlp or jsonl, or install ...
    """
    return ConfigError("metrics", "prometheus", f"otlp or jsonl, or install the Prometheus exporter: {EXTRA}")


class _Switch:
    """What the HTTP server serves: the registry of the configuration installed last."""

    def __init__(self) -> None:
        self.target: CollectorRegistry | None = None

    def collect(self) -> Iterable[Metric]:
        target = self.target
        return target.collect() if target is not None else ()

    def restricted_registry(self, names: Iterable[str]) -> Any:
        target = self.target
        if target is None:
            from prometheus_client import CollectorRegistry

            return CollectorRegistry()
        return target.restricted_registry(names)


class Endpoint:
    """A running scrape endpoint and the configurations that use it."""

    def __init__(self, key: tuple[str, int], server: Any, thread: threading.Thread) -> None:
        self.key = key
        self.server = server
        self.thread = thread
        self.switch = _Switch()
        self.users: set[int] = set()
        self._moved: tuple[int, tuple[str, int]] | None = None  # (by whom, from where) until served

    @property
    def url(self) -> str:
        """The scrape URL, with the port the server is bound to."""
        host = self.key[0]
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{self.server.server_port}/metrics"

    def serve(self, registry: CollectorRegistry) -> None:
        """Serve ``registry`` from now on (the configuration being installed)."""
        global _serving
        self.switch.target = registry
        self._moved = None
        _serving = self

    def rename(self, old: int, new: int) -> None:
        """The configuration known as ``old`` (a placeholder while it was built) is ``new`` from now on."""
        with _lock:
            if old in self.users:
                self.users.discard(old)
                self.users.add(new)
            if self._moved is not None and self._moved[0] == old:
                self._moved = (new, self._moved[1])

    def move(self, key: tuple[str, int], user: int) -> None:
        """Listen on ``key`` instead (same port, another host) for ``user``, the configuration being built.

        Both addresses cannot be listened on at once (the port is tracesim's own): the server
        stops, then starts on the new address; if that fails it starts again where it was.
        Locked by the caller.

        Raises:
            ConfigError: the new address cannot be listened on.
        """
        home = self.key
        try:
            self._rebind(key)
        except ConfigError:
            try:
                self._rebind(home)
            except ConfigError:
                _logger.warning("tracesim: the Prometheus endpoint on %s could not be restarted", home)
                del _endpoints[home]
            raise
        del _endpoints[home]
        _endpoints[key] = self
        self._moved = (user, home)
        self.users.add(user)
        _logger.info("tracesim: Prometheus metrics moved to %s", self.url)

    def _rebind(self, key: tuple[str, int]) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.server, self.thread = _start(key, self.switch)
        self.key = key

    def release(self, user: int, registry: CollectorRegistry) -> None:
        """``user`` (a configuration) stops using the endpoint; the last one stops the server."""
        global _serving
        with _lock:
            self.users.discard(user)
            if self.switch.target is registry:
                self.switch.target = None
            moved = self._moved
            if self.users:
                if moved is not None and moved[0] == user and moved[1] not in _endpoints:
                    # the configuration that moved it is never installed: back where the others want it
                    self._moved = None
                    try:
                        del _endpoints[self.key]
                        self._rebind(moved[1])
                        _endpoints[self.key] = self
                    except ConfigError:
                        _logger.warning(
                            "tracesim: the Prometheus endpoint could not move back to %s", moved[1]
                        )
                return
            if _endpoints.get(self.key) is self:
                del _endpoints[self.key]
            if _serving is self:
                _serving = None
        self.server.shutdown()
        self.server.server_close()


def acquire(host: str, port: int, user: int) -> Endpoint:
    """The endpoint on ``host``:``port`` (0: a free port), started if none runs there yet.

    Raises:
        ConfigError: the extra is not installed, or the address cannot be listened on.
    """
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        raise missing_extra() from None
    key = (host, port)
    with _lock:
        endpoint = _endpoints.get(key)
        if endpoint is None:
            switch = _Switch()
            try:
                server, thread = _start(key, switch)
            except ConfigError as error:
                # tracesim's own server on this port, another host (configure() again): move it
                own = next((e for k, e in _endpoints.items() if port and k[1] == port), None)
                if own is None or not isinstance(error.__cause__, OSError):
                    raise
                if error.__cause__.errno != errno.EADDRINUSE:
                    raise
                own.move(key, user)
                return own
            endpoint = Endpoint(key, server, thread)
            endpoint.switch = switch
            _endpoints[key] = endpoint
            _logger.info("tracesim: Prometheus metrics at %s", endpoint.url)
        endpoint.users.add(user)
        return endpoint


def _start(key: tuple[str, int], switch: _Switch) -> tuple[Any, threading.Thread]:
    """A scrape server on ``key`` serving ``switch``; a `ConfigError` from the OSError if it cannot listen."""
    from prometheus_client import start_wsgi_server

    host, port = key
    try:
        return start_wsgi_server(port, addr=host, registry=switch)
    except OSError as exc:
        raise ConfigError(
            "prometheus_port",
            port,
            f"a port free on {host} ({exc.strerror or exc}); 0 picks a free one",
        ) from exc


def scrape_url() -> str | None:
    """The URL Prometheus scrapes for the active configuration's metrics; None when it has no endpoint.

    With ``prometheus_port=0`` this is how to learn the port the system picked.

    Example:
        >>> scrape_url() is None  # no configuration with metrics="prometheus" is active
        True
    """
    endpoint = _serving
    return endpoint.url if endpoint is not None and endpoint.switch.target is not None else None
