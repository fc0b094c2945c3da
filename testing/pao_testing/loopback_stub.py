"""A recording HTTP server on loopback, the base of the model-API stubs.

A stub subclass answers each request with :meth:`LoopbackStub.respond`; the base
records every request (method, path, headers, parsed JSON body) so a test can prove
what reached the model's context, and lets it wait for one. Standard library and
attrs only: it runs inside the test's loopback-only network namespace.
"""

from __future__ import annotations

import json
import socketserver
import sys
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, ClassVar, Iterable, Iterator
from urllib.parse import parse_qs, urlsplit

import attrs

STOP_POLL_S = 0.02
"""How often a serving loop looks whether it is asked to stop (socketserver's default, 0.5 s, is what each stop waits)."""


@attrs.frozen
class RecordedRequest:
    """One request a stub received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    received_at: float

    @property
    def route(self) -> str:
        """The path without its query string."""
        return urlsplit(self.path).path

    @property
    def query(self) -> dict[str, list[str]]:
        return parse_qs(urlsplit(self.path).query)

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        return next((value for key, value in self.headers.items() if key.lower() == wanted), None)

    def strings(self) -> Iterator[str]:
        """Every string anywhere in the JSON body (the text that reached the model, and more)."""
        yield from _strings(self.body)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


@attrs.frozen
class Reply:
    """What a stub sends back: a status, a content type and the body."""

    status: int
    content_type: str
    body: bytes

    @classmethod
    def json(cls, payload: Any, status: int = 200) -> Reply:
        return cls(status, "application/json", json.dumps(payload).encode())

    @classmethod
    def sse(cls, events: Iterable[tuple[str | None, Any]]) -> Reply:
        """A server-sent-event stream; an event named ``None`` is sent as data only."""
        chunks = []
        for event, data in events:
            head = f"event: {event}\n" if event else ""
            chunks.append(f"{head}data: {json.dumps(data)}\n\n".encode())
        return cls(200, "text/event-stream", b"".join(chunks))


class QuietServer(ThreadingHTTPServer):
    """A threaded HTTP server on which a client that drops its connection (a killed CLI, a client past its
    deadline) prints no traceback; anything else still shows."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)  # a killed CLI drops its connections; anything else shows


def serve_in_thread(server: socketserver.BaseServer, name: str | None = None) -> threading.Thread:
    """``server.serve_forever()`` in a daemon thread that looks for a stop request every :data:`STOP_POLL_S`
    (``shutdown()`` waits for that look)."""
    thread = threading.Thread(target=server.serve_forever, args=(STOP_POLL_S,), name=name, daemon=True)
    thread.start()
    return thread


@attrs.define
class LoopbackStub:
    """A threaded server on ``host:port`` (0: any free port); a context manager."""

    request_type: ClassVar[type[RecordedRequest]] = RecordedRequest
    """What the stub records each request as (a subclass may add its API's readings)."""

    reply: str = "Ready."
    delay: float = 0.0
    host: str = "127.0.0.1"
    port: int = 0
    requests: list[RecordedRequest] = attrs.field(factory=list)
    _server: ThreadingHTTPServer | None = attrs.field(default=None, repr=False)
    _changed: threading.Condition = attrs.field(factory=threading.Condition, repr=False)
    _released: threading.Event = attrs.field(factory=threading.Event, repr=False)
    _hold_limit: float = attrs.field(default=0.0, repr=False)

    def __attrs_post_init__(self) -> None:
        self._released.set()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def respond(self, request: RecordedRequest) -> Reply:
        """The answer to one request; subclasses implement their API here."""
        raise NotImplementedError

    def holds_back(self, request: RecordedRequest) -> bool:
        """Whether ``holding`` and ``delay`` hold back the reply to ``request`` (by default: every POST)."""
        return request.method == "POST"

    @contextmanager
    def holding(self, limit: float = 120.0) -> Iterator[None]:
        """Hold back the replies ``holds_back`` picks until the block ends (at most ``limit`` s each): the agent
        stays busy exactly as long as the test needs to see it, and answers as soon as the block is left."""
        self._hold_limit = limit
        self._released.clear()
        try:
            yield
        finally:
            self._released.set()

    def hold(self, request: RecordedRequest) -> None:
        """Keep the reply to ``request`` back while :meth:`holding`, then for ``delay`` s (if ``holds_back`` it)."""
        if self.holds_back(request):
            self._released.wait(self._hold_limit)
            time.sleep(self.delay)

    def start(self) -> LoopbackStub:
        self._server = QuietServer((self.host, self.port), _handler_for(self))
        self.port = self._server.server_address[1]
        serve_in_thread(self._server, type(self).__name__)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> LoopbackStub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def record(self, request: RecordedRequest) -> None:
        with self._changed:
            self.requests.append(request)
            self._changed.notify_all()

    def wait_for(self, matches: Callable[[RecordedRequest], bool], timeout: float) -> RecordedRequest | None:
        """The first recorded request ``matches`` accepts, waiting up to ``timeout`` seconds."""
        give_up = time.monotonic() + timeout
        with self._changed:
            while True:
                found = next((request for request in self.requests if matches(request)), None)
                left = give_up - time.monotonic()
                if found is not None or left <= 0:
                    return found
                self._changed.wait(left)

    def side_request(self, request: RecordedRequest) -> bool:
        """Whether the CLI sent ``request`` for itself rather than for the user's conversation (none here)."""
        return False

    def wait_for_text(self, route_suffix: str, contains: str, timeout: float) -> RecordedRequest | None:
        """The first request of the user's conversation to a route ending in ``route_suffix`` whose body holds
        ``contains``."""
        return self.wait_for(lambda r: r.route.endswith(route_suffix) and not self.side_request(r)
                             and any(contains in text for text in r.strings()), timeout)


def _handler_for(stub: LoopbackStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output quiet
            pass

        def _handle(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            request = stub.request_type(self.command, self.path, dict(self.headers.items()), body, time.time())
            stub.record(request)
            stub.hold(request)
            reply = stub.respond(request)
            self.send_response(reply.status)
            self.send_header("content-type", reply.content_type)
            self.send_header("content-length", str(len(reply.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(reply.body)

        do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = _handle

    return Handler


def serve_forever(stub: LoopbackStub) -> None:  # pragma: no cover - manual use of a stub module
    """Run ``stub`` in the foreground, printing its URL (``python -m pao_testing.<stub>``)."""
    with stub:
        print(stub.url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
