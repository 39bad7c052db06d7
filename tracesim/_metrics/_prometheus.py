"""The Prometheus scrape endpoint: one HTTP server per host and port, serving the active configuration.

Each configuration reads its metrics into a `CollectorRegistry` of its own (never
``prometheus_client``'s global one, so configuring again registers nothing twice). The HTTP
server outlives a re-configuration on the same host and port: ``configure()`` builds the new
configuration while the old one still runs, and both cannot listen on one port, so the server
is shared and switched to the new registry when the new configuration is installed. It stops
when no configuration uses it any more (``shutdown()``, or a configuration without
``prometheus``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from tracesim._errors import ConfigError

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from prometheus_client.metrics_core import Metric

__all__ = ["Endpoint", "acquire", "scrape_url"]

_logger = logging.getLogger("tracesim")
_lock = threading.Lock()
_endpoints: dict[tuple[str, int], Endpoint] = {}
_serving: Endpoint | None = None  # the endpoint of the active configuration, for `scrape_url`

EXTRA = "pip install 'tracesim[prometheus]'"


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
        _serving = self

    def release(self, user: int, registry: CollectorRegistry) -> None:
        """``user`` (a configuration) stops using the endpoint; the last one stops the server."""
        global _serving
        with _lock:
            self.users.discard(user)
            if self.switch.target is registry:
                self.switch.target = None
            if self.users:
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
        from prometheus_client import start_wsgi_server
    except ImportError:
        raise ConfigError(
            "metrics", "prometheus", f"otlp or jsonl, or install the Prometheus exporter: {EXTRA}"
        ) from None
    key = (host, port)
    with _lock:
        endpoint = _endpoints.get(key)
        if endpoint is None:
            switch = _Switch()
            try:
                server, thread = start_wsgi_server(port, addr=host, registry=switch)
            except OSError as exc:
                raise ConfigError(
                    "prometheus_port",
                    port,
                    f"a port free on {host} ({exc.strerror or exc}); 0 picks a free one",
                ) from None
            endpoint = Endpoint(key, server, thread)
            endpoint.switch = switch
            _endpoints[key] = endpoint
            _logger.info("tracesim: Prometheus metrics at %s", endpoint.url)
        endpoint.users.add(user)
        return endpoint


def scrape_url() -> str | None:
    """The URL Prometheus scrapes for the active configuration's metrics; None when it has no endpoint.

    With ``prometheus_port=0`` this is how to learn the port the system picked.

    Example:
        >>> scrape_url() is None  # no configuration with metrics="prometheus" is active
        True
    """
    endpoint = _serving
    return endpoint.url if endpoint is not None and endpoint.switch.target is not None else None
