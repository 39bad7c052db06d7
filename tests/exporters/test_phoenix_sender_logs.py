"""Phoenix's annotation sender keeps httpx's one INFO line per request out of the user's logs,
and only its own: a user's httpx calls log as they did."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from tracesim.exporters._phoenix import PhoenixAnnotationSink


@pytest.fixture
def accepting() -> Iterator[str]:
    """A server that takes every annotation (200, as Phoenix does), and answers GETs too."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.do_GET()

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "11")
            self.end_headers()
            self.wfile.write(b'{"data":[]}')

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_senders_requests_leave_no_httpx_info_line(
    accepting: str, caplog: pytest.LogCaptureFixture
) -> None:
    sink = PhoenixAnnotationSink(accepting, schedule_delay_s=0.0)
    with caplog.at_level(logging.INFO, logger="httpx"):
        sink.submit("a1b2c3d4e5f60718", "exact", score=1.0, label=None, explanation=None)
        assert sink.force_flush(30)
        assert sink.stats.sent == 1  # the request was made
        assert not [r for r in caplog.records if r.name == "httpx"]
        httpx.get(accepting + "/arize_phoenix_version")
    assert [r for r in caplog.records if r.name == "httpx" and "HTTP Request" in r.getMessage()]
    assert sink.shutdown(5)
