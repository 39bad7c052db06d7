"""Drive Debian's headless Chromium over the DevTools protocol on a pipe, with the stdlib only.

``--remote-debugging-pipe`` makes Chromium read protocol messages from file descriptor 3 and
write them to descriptor 4, each JSON message ending in a NUL byte. A ``sh`` wrapper maps our
``stdin``/``stdout`` pipes onto those descriptors, so no websocket client is needed.
"""

from __future__ import annotations

import base64
import json
import os
import select
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
INSTALL = "apt-get install -y --no-install-recommends chromium"

_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-pipe",
]


class Page:
    """One browser tab: load a URL, record every request it makes, evaluate JavaScript."""

    def __init__(self, profile: Path, *, timeout_s: float = 60.0) -> None:
        self.timeout_s = timeout_s
        self.requests: list[str] = []
        self._buffer = b""
        self._next_id = 0
        self._session: str | None = None
        command = [CHROMIUM.as_posix(), *_FLAGS, f"--user-data-dir={profile}", "about:blank"]
        self._proc = subprocess.Popen(
            ["sh", "-c", 'exec "$@" 3<&0 4>&1 0</dev/null 1>/dev/null', "chromium", *command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
        attached = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})
        self._session = attached["sessionId"]
        self._call("Network.enable")
        self._call("Page.enable")

    def resize(self, width: int, height: int = 900) -> None:
        """Lay the page out in a window ``width`` CSS pixels wide (device scale 1)."""
        metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
        self._call("Emulation.setDeviceMetricsOverride", metrics)

    def load(self, url: str) -> None:
        """Navigate and wait for the load event."""
        self._call("Page.navigate", {"url": url})
        self._wait(lambda m: m.get("method") == "Page.loadEventFired" and m.get("sessionId") == self._session)

    def evaluate(self, expression: str) -> Any:
        """The JSON value of a JavaScript expression evaluated in the page."""
        reply = self._call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in reply:
            raise RuntimeError(reply["exceptionDetails"])
        return reply["result"].get("value")

    def screenshot(self, path: Path) -> None:
        """Save a PNG of the whole page."""
        data = self._call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self._session = None
            self._call("Browser.close")
            self._proc.wait(timeout=self.timeout_s)
        finally:
            if self._proc.poll() is None:
                self._proc.kill()
                self._proc.wait()
            for stream in (self._proc.stdin, self._proc.stdout):
                if stream is not None:
                    stream.close()

    def __enter__(self) -> Page:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if self._session is not None:
            message["sessionId"] = self._session
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(message).encode() + b"\0")
        self._proc.stdin.flush()
        number = self._next_id
        reply = self._wait(lambda m: m.get("id") == number)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply["result"]
        return result

    def _wait(self, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        assert self._proc.stdout is not None
        deadline = time.monotonic() + self.timeout_s
        while True:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                message: dict[str, Any] = json.loads(raw)
                if message.get("method") == "Network.requestWillBeSent":
                    self.requests.append(message["params"]["request"]["url"])
                if done(message):
                    return message
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("Chromium did not answer in time")
            ready, _, _ = select.select([self._proc.stdout], [], [], left)
            if ready:
                chunk = os.read(self._proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    raise EOFError(f"Chromium exited with status {self._proc.wait()}")
                self._buffer += chunk
