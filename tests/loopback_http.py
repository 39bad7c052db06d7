"""A scripted HTTP endpoint's plumbing: a server on a free loopback port, served from a thread.

The test backends (``otlp_sink.OtlpSink``, ``scripted_backend.ScriptedBackend``,
``hostile.OtlpJsonSink``...) differ in what they answer, not in how they serve: each builds
its request handler on ``QuietHandler`` and runs it in a ``LoopbackHTTP``.

Example:
    >>> import urllib.request
    >>> class Teapot(QuietHandler):
    ...     def do_GET(self) -> None:
    ...         self.reply(418, "text/plain", b"short and stout")
    >>> http = LoopbackHTTP(Teapot)
    >>> opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    >>> try:
    ...     opener.open(f"{http.base}/")
    ... except urllib.error.HTTPError as exc:
    ...     print(exc.code, exc.read())
    418 b'short and stout'
    >>> http.close()
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that logs nothing (pytest runs with warnings as errors and a clean stderr)."""

    def reply(
        self, status: int, content_type: str, payload: bytes = b"", headers: Iterable[tuple[str, str]] = ()
    ) -> None:
        """Send ``status`` with ``payload`` (its type and length as headers, then ``headers``)."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if payload:
            self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        pass


class LoopbackHTTP:
    """``handler`` served on 127.0.0.1 (a free port) by a daemon thread until ``close()``.

    ``poll_interval_s`` is how often the serving loop checks for ``close()``.
    """

    def __init__(self, handler: type[BaseHTTPRequestHandler], *, poll_interval_s: float = 0.5) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(poll_interval_s,), daemon=True
        )
        self._thread.start()

    @property
    def port(self) -> int:
        port: int = self._server.server_address[1]
        return port

    @property
    def base(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        """Stop serving, close the socket, and wait for the thread."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
