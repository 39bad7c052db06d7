"""A scripted OpenAI-compatible server on 127.0.0.1, for tests that drive the real ``openai`` client.

``POST /v1/embeddings`` gets deterministic bag-of-words vectors, ``POST /v1/chat/completions`` (and
``/v1/responses``, and Anthropic's ``/v1/messages`` for the real ``anthropic`` client at
``root_url``) what ``judge`` says; every request is recorded, requests in flight are counted,
misbehaviour is scripted::

    with LLMServer() as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=1)
        server.script("/v1/embeddings", Reply.status(429, retry_after=0.1))
        client.embeddings.create(model="m", input="hello")  # retried once, then answered
        assert server.count("/v1/embeddings") == 2
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import itertools
import json
import math
import re
import socket
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.client import responses
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import pytest
from llm_formats import (
    MESSAGES,
    RESPONSES,
    SSE,
    SSE_EVENTS,
    Json,
    error_body,
    event_stream,
    message_text,
    messages_answer,
    messages_error_body,
    responses_answer,
    tokens,
)

EMBEDDINGS = "/v1/embeddings"
CHAT = "/v1/chat/completions"
DEFAULT_JUDGEMENT = '{"score": 5, "reason": "scripted default"}'
_POLL_S = 0.05  # how often a waiting answer looks whether its client has gone


@dataclass(frozen=True)
class Recorded:
    """One request: lower-cased headers, JSON body (None if not an object), ``at`` = monotonic arrival."""

    path: str
    body: Json | None
    headers: dict[str, str]
    at: float


@dataclass(frozen=True)
class Reply:
    """How the server answers one request: ``server.script(CHAT, Reply.status(503), Reply.content("{}"))``."""

    kind: Literal[
        "ok",
        "content",
        "status",
        "slow",
        "hold",
        "hang",
        "drop",
        "garbage",
        "truncated",
        "trickle",
        "oversized",
        "tool_call",
    ] = "ok"
    text: str = ""
    code: int = 200
    retry_after: float | None = None
    body: Json | None = None
    seconds: float = 0.0
    then: Reply | None = None
    size: int = 0
    tool: str = ""

    @classmethod
    def ok(cls) -> Reply:
        """Answer normally."""
        return cls()

    @classmethod
    def content(cls, text: str) -> Reply:
        """Answer with this text (chat, Responses, Messages); a forced tool call gets it as its arguments."""
        return cls("content", text=text)

    @classmethod
    def tool_call(cls, name: str, arguments: str) -> Reply:
        """Answer a chat (or Responses) request with a call of tool ``name`` (``arguments``: JSON
        text), whatever its ``tool_choice``: what a model does when it decides to call a tool."""
        return cls("tool_call", text=arguments, tool=name)

    @classmethod
    def status(cls, code: int, *, retry_after: float | None = None, body: Json | None = None) -> Reply:
        """Answer ``code`` with ``body`` or an OpenAI-style error; ``retry_after`` (s) sets both headers."""
        return cls("status", code=code, retry_after=retry_after, body=body)

    @classmethod
    def slow(cls, seconds: float, then: Reply | None = None) -> Reply:
        """Wait ``seconds`` (less if the client leaves or the server closes), then answer ``then``."""
        return cls("slow", seconds=seconds, then=then)

    @classmethod
    def hold(cls, then: Reply | None = None) -> Reply:
        """Wait until ``server.release()`` (or close, or the client leaves), then answer ``then``."""
        return cls("hold", then=then)

    @classmethod
    def hang(cls) -> Reply:
        """Never answer: wait until ``close()`` or until the client disconnects."""
        return cls("hang")

    @classmethod
    def drop(cls) -> Reply:
        """Close the connection without answering."""
        return cls("drop")

    @classmethod
    def garbage(cls) -> Reply:
        """Status 200, ``Content-Type: application/json``, a body that is not JSON."""
        return cls("garbage")

    @classmethod
    def truncated(cls) -> Reply:
        """Status 200 with a Content-Length larger than the body sent, then close the connection."""
        return cls("truncated")

    @classmethod
    def trickle(cls, seconds: float, then: Reply | None = None) -> Reply:
        """Send ``then``'s status and headers at once (a normal answer by default), then its body one
        byte every ``seconds``: a read timeout per byte never fires. Stops when the client leaves."""
        return cls("trickle", seconds=seconds, then=then)

    @classmethod
    def oversized(cls, size: int) -> Reply:
        """Status 200 and a valid chat answer grading 5, padded to ``size`` bytes by an extra field;
        sent in 1 MiB writes, never held whole in memory."""
        return cls("oversized", size=size)


_AZURE = re.compile(r"/openai/deployments/[^/]+(/chat/completions|/embeddings)")


def route(path: str) -> str:
    """The /v1 path that answers ``path``: Azure OpenAI's ``/openai/deployments/<name>/...`` too."""
    azure = _AZURE.fullmatch(path)
    return f"/v1{azure.group(1)}" if azure else path


class LLMServer:
    """The scripted model server (example in the module docstring); ``start()`` it once, or use ``with``."""

    def __init__(self, *, dims: int = 64, model: str = "scripted-model") -> None:
        self.dims, self.model = dims, model
        self.delay_s = 0.0
        self.judge: Callable[[Json], str] = lambda request: DEFAULT_JUDGEMENT
        # how a request no script answers is answered (None: normally), e.g. an agent's loop:
        # a tool call first, then text once the request carries the tool's result
        self.policy: Callable[[str, Json], Reply | None] | None = None
        self.errors: list[BaseException] = []  # bugs of the server itself; the fixture fails on them
        # counters are written under _cond and read without it (an int read is atomic)
        self.in_flight = self.max_in_flight = 0
        self.connections = 0  # accepted: with keep-alive, fewer than requests
        self._cond = threading.Condition()  # an RLock underneath: checks may call count() etc.
        self._requests: list[Recorded] = []
        self._scripts: dict[str, deque[Reply]] = {}
        self._ids = itertools.count(1)
        self._closing, self._gate = threading.Event(), threading.Event()
        self._handlers: list[_Handler] = []
        self._threads: list[threading.Thread] = []
        self._http: _HTTPServer | None = None

    def start(self) -> LLMServer:
        self._http = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._http.llm = self
        thread = threading.Thread(target=self._http.serve_forever, args=(_POLL_S,), daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def close(self) -> None:
        """Stop serving, end every waiting answer and open connection at once, join the threads."""
        if self._http is None:
            return
        self._closing.set()
        self._http.shutdown()
        with self._cond:
            handlers, threads = list(self._handlers), list(self._threads)
        for handler in handlers:  # idle keep-alive connections block in read(): wake them with EOF
            handler.hang_up()
        self._http.server_close()
        deadline = time.monotonic() + 5.0  # a stuck handler thread is a daemon: don't wait forever
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._http = None

    def __enter__(self) -> LLMServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def base_url(self) -> str:
        """What the ``openai`` client takes as ``base_url``: ``http://127.0.0.1:<port>/v1``."""
        return f"{self.root_url}/v1"

    @property
    def root_url(self) -> str:
        """What the ``anthropic`` client takes as ``base_url`` (it adds ``/v1/messages`` itself)."""
        assert self._http is not None, "start() the server first"
        return f"http://127.0.0.1:{self._http.server_address[1]}"

    @property
    def requests(self) -> list[Recorded]:
        """What was received, in order (a copy)."""
        with self._cond:
            return list(self._requests)

    def count(self, path: str | None = None) -> int:
        """Requests received (to ``path``, like ``"/v1/embeddings"``)."""
        with self._cond:
            return sum(1 for r in self._requests if path is None or r.path == path)

    def reset(self) -> None:
        """Forget requests, counters and scripts; restore ``delay_s``, ``judge`` and close the hold gate."""
        with self._cond:
            self._requests, self._scripts = [], {}
            self.max_in_flight, self.connections = self.in_flight, 0
            self.delay_s, self.judge, self.policy = 0.0, lambda request: DEFAULT_JUDGEMENT, None
            self._gate.clear()

    def script(self, path: str, *replies: Reply) -> None:
        """The next ``len(replies)`` requests to ``path`` get these, in order; then the default again."""
        if not path.startswith("/"):
            raise ValueError(f"path must start with '/', like {EMBEDDINGS!r}; got {path!r}")
        with self._cond:
            self._scripts.setdefault(path, deque()).extend(replies)

    def release(self) -> None:
        """Let every ``Reply.hold()`` answer, now and until ``reset()``."""
        self._gate.set()

    def wait_until(self, check: Callable[[], bool], timeout_s: float = 10.0) -> bool:
        """Wait until ``check()``, e.g. ``lambda: server.in_flight == 8``, holds; False on timeout.

        ``check`` is looked at whenever a request arrives or leaves, never by polling.
        """
        with self._cond:
            return self._cond.wait_for(check, timeout_s)

    @staticmethod
    def vector(text: str, dims: int = 64) -> list[float]:
        """The embedding served for ``text``: signed hashed word counts, L2-normalised.

        >>> LLMServer.vector("a b", 4) == LLMServer.vector("B, A!", 4)
        True
        """
        counts = [0.0] * dims
        for token in tokens(text):
            digest = hashlib.blake2b(token.encode(), digest_size=8).digest()  # stable across processes
            counts[int.from_bytes(digest[:4], "little") % dims] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(c * c for c in counts))
        if norm == 0.0:  # no words: a fixed unit vector, so cosine stays defined
            return [1.0] + [0.0] * (dims - 1)
        return [c / norm for c in counts]

    # -- called by the handler threads --------------------------------------------------------

    def _arrive(self, record: Recorded) -> tuple[Reply, int]:
        with self._cond:
            self._requests.append(record)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            path = route(record.path)
            queue = self._scripts.get(path)
            self._cond.notify_all()
            reply = queue.popleft() if queue else None
            if reply is None and self.policy is not None and record.body is not None:
                reply = self.policy(path, record.body)
            return (reply or Reply.ok()), next(self._ids)

    def _depart(self) -> None:
        with self._cond:
            self.in_flight -= 1
            self._cond.notify_all()

    def _track(self, handler: _Handler, joining: bool) -> None:
        with self._cond:
            if not joining:
                self._handlers.remove(handler)
                return
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(threading.current_thread())
            self._handlers.append(handler)
            self.connections += 1
        if self._closing.is_set():  # accepted while close() was running
            handler.hang_up()

    def _answer(
        self, path: str, body: Json | None, content: str | None, n: int, tool: str | None = None
    ) -> tuple[int, Json]:
        if path in (RESPONSES, MESSAGES):
            text = self.judge(body or {}) if content is None else content
            if path == RESPONSES:
                return responses_answer(self.model, body or {}, text, n, tool)
            return messages_answer(self.model, body or {}, text, n)
        if path in (EMBEDDINGS, CHAT):
            if path == EMBEDDINGS:
                return self._embeddings(body or {})
            return self._chat(body or {}, content, n, tool)
        return 404, error_body(404, f"no such path: {path}")

    def _embeddings(self, body: Json) -> tuple[int, Json]:
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            return 400, error_body(400, "'input' must be a string or a non-empty list of strings")
        dims, fmt = body.get("dimensions") or self.dims, body.get("encoding_format", "float")
        if not isinstance(dims, int) or dims < 1 or fmt not in ("float", "base64"):
            return 400, error_body(400, "bad 'dimensions' or 'encoding_format'")
        data: list[Json] = []
        for i, text in enumerate(texts):
            vec: Any = self.vector(text, dims)
            if fmt == "base64":  # what the client asks for by default: little-endian float32
                vec = base64.b64encode(struct.pack(f"<{dims}f", *vec)).decode("ascii")
            data.append({"object": "embedding", "index": i, "embedding": vec})
        n_tokens = sum(len(tokens(t)) for t in texts)
        usage = {"prompt_tokens": n_tokens, "total_tokens": n_tokens}
        return 200, {"object": "list", "data": data, "model": self.model, "usage": usage}

    def _chat(self, body: Json, content: str | None, n: int, tool: str | None = None) -> tuple[int, Json]:
        if not isinstance(body.get("messages"), list):
            return 400, error_body(400, "'messages' must be a list")
        text = self.judge(body) if content is None else content
        message: Json = {"role": "assistant", "content": text}
        finish, choice = "stop", body.get("tool_choice")
        forced = isinstance(choice, dict) and choice.get("type") == "function"
        if forced or tool:  # a forced function call, or one the script says the model chose
            name = tool or str((choice.get("function") or {}).get("name"))  # type: ignore[union-attr]
            call = {"name": name, "arguments": text}
            tool_calls = [{"id": f"call_{n}", "type": "function", "function": call}]
            message, finish = {"role": "assistant", "content": None, "tool_calls": tool_calls}, "tool_calls"
        p, c = sum(len(tokens(message_text(m))) for m in body["messages"]), len(tokens(text))
        usage = {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}
        head = {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
        }
        if body.get("stream"):
            return 200, {SSE: _chunks(head, message, finish, usage, body)}
        choices = [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}]
        return 200, head | {"choices": choices, "usage": usage}


def _chunks(head: Json, message: Json, finish: str, usage: Json, body: Json) -> list[Json]:
    """A streamed answer as chat.completion.chunk events: the role, the words, the finish, the usage."""
    head = head | {"object": "chat.completion.chunk"}

    def chunk(delta: Json, finish_reason: str | None = None) -> Json:
        return head | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

    events = [chunk({"role": "assistant", "content": ""})]
    if message.get("tool_calls"):
        events.append(chunk({"tool_calls": [{"index": 0, **message["tool_calls"][0]}]}))
    else:
        events += [chunk({"content": word}) for word in re.findall(r"\S+\s*", message["content"] or "")]
    events.append(chunk({}, finish))
    if (body.get("stream_options") or {}).get("include_usage"):
        events.append(head | {"choices": [], "usage": usage})
    return events


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # LLMServer.close() joins, with a deadline, after hanging up idle connections
    request_queue_size = 256  # a burst of concurrent clients must not wait on SYN retries

    llm: LLMServer

    def handle_error(self, request: object, client_address: object) -> None:
        error = sys.exc_info()[1]  # the default prints a traceback; OSError is a client that left
        if error is not None and not isinstance(error, OSError):
            with self.llm._cond:
                self.llm.errors.append(error)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as httpx expects
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        self._pending = False
        self.server.llm._track(self, joining=True)

    def finish(self) -> None:
        self.server.llm._track(self, joining=False)
        super().finish()

    def hang_up(self) -> None:
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the default writes every request to stderr

    def do_POST(self) -> None:
        llm = self.server.llm
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        body = body if isinstance(body, dict) else None
        path = self.path.split("?", 1)[0]
        headers = {k.lower(): v for k, v in self.headers.items()}
        reply, n = llm._arrive(Recorded(path, body, headers, time.monotonic()))
        path = route(path)  # Azure OpenAI's deployment paths are answered like /v1's
        self._pending = True
        try:
            if self._pause(llm.delay_s, None):
                self._play(reply, path, body, n)
            else:
                self.close_connection = True
        finally:
            self._settle()

    do_GET = do_POST

    def _play(self, reply: Reply, path: str, body: Json | None, n: int) -> None:
        llm = self.server.llm
        while reply.kind in ("slow", "hold"):
            gate = llm._gate if reply.kind == "hold" else None
            if not self._pause(reply.seconds if gate is None else None, gate):
                self.close_connection = True
                return
            reply = reply.then or Reply.ok()
        if reply.kind in ("hang", "drop"):
            if reply.kind == "hang":
                self._pause(None, None)
            self.close_connection = True
        elif reply.kind == "trickle":
            self._trickle(reply.seconds, reply.then or Reply.ok(), path, body, n)
        elif reply.kind == "oversized":
            self._oversized(reply.size, n)
        elif reply.kind == "garbage":
            self._send(200, b'{"object": "list", "data": [<<not json', n)
        elif reply.kind == "truncated":
            self._send(200, json.dumps(llm._answer(path, body, None, n)[1]).encode()[:20], n, extra=100)
        elif reply.kind == "status":
            wait = reply.retry_after
            headers = (
                {} if wait is None else {"retry-after": f"{wait:g}", "retry-after-ms": f"{wait * 1000:g}"}
            )
            default = messages_error_body if path == MESSAGES else error_body  # each API's error shape
            error = reply.body if reply.body is not None else default(reply.code)
            self._send(reply.code, json.dumps(error).encode(), n, headers)
        else:
            content = reply.text if reply.kind in ("content", "tool_call") else None
            status, answer = llm._answer(path, body, content, n, reply.tool or None)
            if SSE in answer or SSE_EVENTS in answer:
                self._send(status, event_stream(answer), n, {"Content-Type": "text/event-stream"})
            else:
                self._send(status, json.dumps(answer).encode(), n)

    def _send(
        self, status: int, body: bytes, n: int, headers: dict[str, str] | None = None, extra: int = 0
    ) -> None:
        head = {"Content-Type": "application/json", "Content-Length": f"{len(body) + extra}"}
        head |= (headers or {}) | {"x-request-id": f"req_{n}"}
        lines = [f"{self.protocol_version} {status} {responses.get(status, 'Status')}"]
        lines += [f"{k}: {v}" for k, v in head.items()]
        data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
        # Counted out before the write: after it, the client may already send its next request
        # (on another connection) and max_in_flight would see one request too many.
        self._settle()
        self.close_connection = self.close_connection or extra > 0
        try:
            self.wfile.write(data)
        except OSError:
            self.close_connection = True

    def _trickle(self, seconds: float, then: Reply, path: str, body: Json | None, n: int) -> None:
        text = then.text if then.kind == "content" else None
        status, answer = self.server.llm._answer(path, body, text, n)
        data = json.dumps(answer).encode()
        self._settle()
        self.close_connection = True
        try:
            self.wfile.write(self._head(status, len(data), n))
            for i in range(len(data)):
                if not self._pause(seconds, None):
                    return
                self.wfile.write(data[i : i + 1])
        except OSError:
            pass

    def _oversized(self, size: int, n: int) -> None:
        status, answer = self.server.llm._answer(CHAT, {"messages": []}, '{"reason": "r", "score": 5}', n)
        before, after = json.dumps(answer | {"padding": "@@"}).encode().split(b"@@")
        pad = max(0, size - len(before) - len(after))
        self._settle()
        self.close_connection = True
        try:
            self.wfile.write(self._head(status, len(before) + pad + len(after), n) + before)
            chunk = b"x" * (1 << 20)
            for start in range(0, pad, len(chunk)):
                self.wfile.write(chunk[: min(len(chunk), pad - start)])
            self.wfile.write(after)
        except OSError:
            pass

    def _head(self, status: int, length: int, n: int) -> bytes:
        head = {"Content-Type": "application/json", "Content-Length": f"{length}", "x-request-id": f"req_{n}"}
        lines = [f"{self.protocol_version} {status} {responses.get(status, 'Status')}"]
        lines += [f"{k}: {v}" for k, v in head.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def _settle(self) -> None:
        if self._pending:
            self._pending = False
            self.server.llm._depart()

    def _pause(self, seconds: float | None, gate: threading.Event | None) -> bool:
        """Wait ``seconds`` (None: forever) or until ``gate`` opens: True. Closing or client gone: False."""
        closing = self.server.llm._closing
        if seconds is not None and seconds <= 0:
            return not closing.is_set()
        deadline = None if seconds is None else time.monotonic() + seconds
        while not self._client_gone():
            if gate is not None and gate.is_set():
                return True
            left = _POLL_S if deadline is None else min(_POLL_S, deadline - time.monotonic())
            if left <= 0:
                return True
            if closing.wait(left):
                return False
        return False

    def _client_gone(self) -> bool:
        try:
            return bool(self.connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"")
        except BlockingIOError:
            return False  # nothing to read: still connected
        except OSError:
            return True


@pytest.fixture(name="llm_server")  # the name holds whatever name it is imported under
def llm_server() -> Iterator[LLMServer]:
    """A started `LLMServer`, closed after the test; fails the test on a bug inside the server."""
    with LLMServer() as server:
        yield server
    assert not server.errors, f"the scripted server failed: {server.errors!r}"
