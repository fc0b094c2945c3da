"""A loopback stand-in for the Anthropic Messages API, recording every request.

Coding-agent CLIs under test point ``ANTHROPIC_BASE_URL`` here. The stub answers
``HEAD /`` (a connectivity probe), streams a short SSE reply to
``POST /v1/messages`` (or a JSON message when the request does not ask for a
stream), answers ``count_tokens``, and records each request so a test can prove
what reached the model's context. ``delay`` holds each reply back (for the
agent's busy screen); a user message containing ``tool_trigger`` is answered with
a ``tool_use`` of ``tool_call`` (for the agent's permission menu). Standard library only: it runs inside the test's network
namespace with nothing else installed.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator

import attrs


@attrs.frozen
class RecordedRequest:
    """One request the stub received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    received_at: float

    @property
    def is_conversation(self) -> bool:
        """A turn of the agent's conversation (it offers tools), not a side call such as a title."""
        return self.is_message and isinstance(self.body, dict) and bool(self.body.get("tools"))

    @property
    def is_message(self) -> bool:
        return self.method == "POST" and self.path.split("?")[0] == "/v1/messages"

    def text(self) -> str:
        """System prompt and every message's text of a Messages request, joined."""
        if not isinstance(self.body, dict):
            return ""
        return "\n".join(_texts(self.body.get("system"))) + "\n" + "\n".join(
            text for message in self.body.get("messages") or [] for text in _texts(message.get("content"))
        )

    def first_user_text(self) -> str:
        """The text of the first user message (all its content blocks)."""
        if not isinstance(self.body, dict):
            return ""
        for message in self.body.get("messages") or []:
            if message.get("role") == "user":
                return "\n".join(_texts(message.get("content")))
        return ""


def _texts(content: Any) -> Iterator[str]:
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, dict):
                if isinstance(block.get("text"), str):
                    yield block["text"]
                elif "content" in block:
                    yield from _texts(block["content"])


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)  # a killed CLI drops its connections; anything else shows


@attrs.define
class AnthropicStub:
    """The stub server; use as a context manager or call ``start``/``stop``."""

    reply: str = "Ready."
    delay: float = 0.0
    tool_trigger: str | None = None
    tool_call: tuple[str, dict[str, Any]] = ("Bash", {"command": "touch pao-stub-file", "description": "Create a file"})
    host: str = "127.0.0.1"
    port: int = 0
    requests: list[RecordedRequest] = attrs.field(factory=list)
    _server: _QuietServer | None = attrs.field(default=None, repr=False)
    _thread: threading.Thread | None = attrs.field(default=None, repr=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, repr=False)
    _changed: threading.Condition = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        self._changed = threading.Condition(self._lock)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> AnthropicStub:
        self._server = _QuietServer((self.host, self.port), _handler_for(self))
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="anthropic-stub", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> AnthropicStub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def record(self, request: RecordedRequest) -> None:
        with self._changed:
            self.requests.append(request)
            self._changed.notify_all()

    def messages(self) -> list[RecordedRequest]:
        """The ``POST /v1/messages`` requests so far, oldest first."""
        with self._lock:
            return [r for r in self.requests if r.is_message]

    def wait_for_message(
        self, contains: str, timeout: float, where: Callable[[RecordedRequest], bool] | None = None
    ) -> RecordedRequest | None:
        """Wait until a Messages request whose text contains ``contains`` (and matches ``where``) arrives."""
        give_up = time.monotonic() + timeout
        with self._changed:
            while True:
                for request in self.requests:
                    if request.is_message and contains in request.text() and (where is None or where(request)):
                        return request
                left = give_up - time.monotonic()
                if left <= 0:
                    return None
                self._changed.wait(left)


def _handler_for(stub: AnthropicStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output quiet
            pass

        def _record(self, body: Any) -> None:
            stub.record(RecordedRequest(self.command, self.path, dict(self.headers.items()), body, time.time()))

        def _send_json(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_HEAD(self) -> None:
            self._record(None)
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            self._record(None)
            self._send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            self._record(body)
            path = self.path.split("?")[0]
            if path == "/v1/messages/count_tokens":
                self._send_json(200, {"input_tokens": max(1, len(raw) // 4)})
            elif path == "/v1/messages":
                if stub.delay:
                    time.sleep(stub.delay)
                streaming = isinstance(body, dict) and body.get("stream")
                model = body.get("model", "stub") if isinstance(body, dict) else "stub"
                tool = stub.tool_call if _wants_tool(body, stub.tool_trigger) else None
                if streaming:
                    self._stream(model, tool)
                else:
                    self._send_json(200, _message(model, stub.reply))
            else:
                self._send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})

        def _stream(self, model: str, tool: tuple[str, dict[str, Any]] | None) -> None:
            start = _message(model, "")
            start["content"] = []
            start["stop_reason"] = None
            if tool is None:
                block: dict[str, Any] = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": stub.reply}
            else:
                block = {"type": "tool_use", "id": f"toolu_stub_{time.monotonic_ns()}", "name": tool[0], "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(tool[1])}
            events = [
                _sse("message_start", {"type": "message_start", "message": start}),
                _sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
                _sse("ping", {"type": "ping"}),
                _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
                _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
                _sse(
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": "tool_use" if tool else "end_turn", "stop_sequence": None},
                        "usage": {"output_tokens": 3},
                    },
                ),
                _sse("message_stop", {"type": "message_stop"}),
            ]
            payload = b"".join(events)
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler


def _wants_tool(body: Any, trigger: str | None) -> bool:
    """The last user message is the user's own text (not a tool result) and holds the trigger.

    Newer CLIs put a ``system`` role message after it, so look for the last user one.
    """
    if not trigger or not isinstance(body, dict):
        return False
    users = [m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"]
    if not users:
        return False
    content = users[-1].get("content")
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return False
    return any(trigger in text for text in _texts(content))


def _message(model: str, text: str) -> dict[str, Any]:
    return {
        "id": f"msg_stub_{time.monotonic_ns()}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 3},
    }


def main() -> None:  # pragma: no cover - manual use: python -m pao_core.testing.anthropic_stub
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0)
    args = parser.parse_args()
    with AnthropicStub(port=args.port, delay=args.delay) as stub:
        print(stub.url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":  # pragma: no cover
    main()
