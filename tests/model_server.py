"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for the model-layer tests.

It answers `POST .../chat/completions` the way an OpenAI-compatible server (vLLM and the like)
does, so mini-swe-agent's real litellm model class talks to it over HTTP. Each request takes
the next reply of the script; when the script is used up, `then` (if given) answers every
further request, otherwise the server answers 500 (a script that ran out is a test bug, and
an endless failure is what such a test must see).

A reply is:
- a command (a string): an assistant message with one `bash` tool call, which is the format
  mini-swe-agent 2.4.6's default model class (`litellm`, tool calling) expects
- `Reply(commands=[...], content=...)`: several tool calls, or none (text only: mini-swe-agent's
  format error)
- `Reply(status=429)` / `Reply(status=500)`: an HTTP error with an OpenAI-style error body
- `Reply(hang_sec=S)`: no answer for S seconds (the client's timeout is meant to fire first)
- `Reply(garbage=True)`: a 200 whose body is not JSON

Every reply reports `usage` (`prompt_tokens`, `completion_tokens`). The server is bounded: it
counts requests, answers at most `max_requests` of them (503 after that), and stops itself
after `lifetime_sec` even if the test forgot to.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HOST = "127.0.0.1"  # the only address these tests may use


@dataclass(frozen=True)
class Reply:
    commands: tuple[str, ...] = ()
    content: str = ""
    status: int = 200
    hang_sec: float = 0.0
    garbage: bool = False
    prompt_tokens: int = 100
    completion_tokens: int = 20


def as_reply(entry: str | Reply) -> Reply:
    return Reply(commands=(entry,)) if isinstance(entry, str) else entry


@dataclass
class ModelServer:
    script: list[str | Reply] = field(default_factory=list)
    then: str | Reply | None = None
    served_model: str = "served-model"
    max_requests: int = 200
    lifetime_sec: float = 300.0
    requests: int = 0
    bodies: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._replies = [as_reply(entry) for entry in self.script]
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._threads: list[threading.Thread] = []

    @property
    def url(self) -> str:
        """The `api_base` of an OpenAI-compatible endpoint (litellm appends /chat/completions)."""
        assert self._httpd is not None, "the server is not started"
        return f"http://{HOST}:{self._httpd.server_address[1]}/v1"

    def start(self) -> ModelServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                server._answer(self)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass  # quiet: the tests assert on counts, not on an access log

        self._httpd = ThreadingHTTPServer((HOST, 0), Handler)  # port 0: an ephemeral port
        self._httpd.daemon_threads = True
        serving = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        # Bounded: a test that never calls stop() still gets its port back.
        timer = threading.Timer(self.lifetime_sec, self.stop)
        timer.daemon = True
        self._threads = [serving, timer]
        serving.start()
        timer.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # releases hanging replies
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        for thread in self._threads:
            if isinstance(thread, threading.Timer):
                thread.cancel()

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- answering ---------------------------------------------------------------------
    def _next(self) -> tuple[int, Reply | None]:
        with self._lock:
            self.requests += 1
            number = self.requests
            if number > self.max_requests:
                return number, None
            if number <= len(self._replies):
                return number, self._replies[number - 1]
            return number, as_reply(self.then) if self.then is not None else Reply(status=500, content="script ran out")

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"unparsable": raw.decode("utf-8", errors="replace")}
        with self._lock:
            self.bodies.append(body)
        number, reply = self._next()
        if not handler.path.rstrip("/").endswith("/chat/completions"):
            self._send(handler, 404, _error("not found", "not_found_error"))
        elif reply is None:
            self._send(handler, 503, _error(f"more than {self.max_requests} requests", "server_error"))
        elif reply.hang_sec > 0:
            self._stopping.wait(reply.hang_sec)  # the client gives up first; stop() ends it early
            self._send(handler, 200, self._completion(number, Reply(content="too late")))
        elif reply.status != 200:
            kind = "rate_limit_error" if reply.status == 429 else "server_error"
            self._send(handler, reply.status, _error(reply.content or f"scripted {reply.status}", kind))
        elif reply.garbage:
            self._send_raw(handler, 200, b"<html>this is not JSON")
        else:
            self._send(handler, 200, self._completion(number, reply))

    def _completion(self, number: int, reply: Reply) -> dict[str, Any]:
        calls = [{"id": f"call_{number}_{i}", "type": "function",
                  "function": {"name": "bash", "arguments": json.dumps({"command": command})}}
                 for i, command in enumerate(reply.commands)]
        message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
        if calls:
            message["tool_calls"] = calls
        return {
            "id": f"chatcmpl-{number}", "object": "chat.completion", "created": int(time.time()),
            "model": self.served_model,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                      "total_tokens": reply.prompt_tokens + reply.completion_tokens},
        }

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any]) -> None:
        ModelServer._send_raw(handler, status, json.dumps(payload).encode(), content_type="application/json")

    @staticmethod
    def _send_raw(handler: BaseHTTPRequestHandler, status: int, data: bytes, content_type: str = "text/html") -> None:
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", content_type)
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
        except OSError:
            pass  # the client gave up (its timeout): nothing to answer


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": None}}

