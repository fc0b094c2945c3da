"""Every fault of a history server becomes an error or timeout result within the deadline.

A small, deliberately faulty HTTP server on loopback answers the MCP handshake
properly and then misbehaves in the way its URL path names.
"""

from __future__ import annotations

import json
import socket
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

import pytest

from pao_core.gather import gather
from pao_historyworker.backend import HistoryBackend
from pao_historyworker.options import HistoryOptions
from pao_testing.loopback_stub import QuietServer, serve_in_thread

DEADLINE = 1.0
ITEM = {
    "id": "msg:s1:u1",
    "session_id": "s1",
    "project": "/srv/app",
    "cwd": "/srv/app",
    "git_branch": "main",
    "timestamp": "2026-01-02T03:04:05+00:00",
    "title": "app · 2026-01-02",
    "text": "User: hi\nAssistant: hello",
    "score": 1.5,
    "uuids": ["u1", "u2"],
}


class FaultyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        return

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.seen.append((self.path, body.get("method"), self.headers.get("Mcp-Session-Id"), self.headers.get("Authorization")))
        if body.get("method") == "initialize":
            return self._json({"jsonrpc": "2.0", "id": body["id"], "result": {"protocolVersion": "2025-06-18"}}, session="sess-42")
        if "id" not in body:
            return self._raw(202, b"", "application/json")
        fault = self.path.strip("/")
        result = {"items": [ITEM]}
        if self.server.mcp and body.get("method") == "tools/call":
            if self.headers.get("Mcp-Session-Id") != "sess-42":
                return self._raw(400, b"missing session", "text/plain")
            result = {"content": [{"type": "text", "text": json.dumps(result)}]}
        answer = {"jsonrpc": "2.0", "id": body["id"], "result": result}
        if fault == "ok":
            return self._json(answer)
        if fault == "sse-ok":
            events = ": keep-alive\n\n" + 'data: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\n'
            events += "event: message\ndata: " + json.dumps(answer) + "\n\n"
            return self._raw(200, events.encode(), "text/event-stream")
        if fault == "http500":
            return self._raw(500, b"boom", "text/plain")
        if fault == "http403":
            return self._raw(403, b"nope", "text/plain")
        if fault == "not-json":
            return self._raw(200, b"<html>gateway</html>", "application/json")
        if fault == "rpc-error":
            return self._json({"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32000, "message": "index\nlocked"}})
        if fault == "wrong-shape":
            return self._json({"jsonrpc": "2.0", "id": body["id"], "result": {"items": [{"id": 7}]}})
        if fault == "huge":
            return self._json({"jsonrpc": "2.0", "id": body["id"], "result": {"items": [ITEM] * 1000}})  # ~300 KB
        if fault == "slow":
            time.sleep(DEADLINE * 4)
            return self._json(answer)
        if fault in ("sse-endless", "trickle"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream" if fault == "sse-endless" else "application/json")
            self.end_headers()
            try:
                for _ in range(100):
                    self.wfile.write(b": still here\n\n" if fault == "sse-endless" else b" ")
                    self.wfile.flush()
                    time.sleep(0.05)
            except OSError:
                pass
            return None
        return self._raw(404, b"no such fault", "text/plain")

    def _json(self, body: dict, session: str | None = None) -> None:
        self._raw(200, json.dumps(body).encode(), "application/json", session)

    def _raw(self, status: int, payload: bytes, kind: str, session: str | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(payload)))
        if session:
            self.send_header("Mcp-Session-Id", session)
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture(params=["jsonrpc", "mcp"])
def faulty(request) -> Iterator[tuple[str, str, ThreadingHTTPServer]]:
    server = QuietServer(("127.0.0.1", 0), FaultyHandler)
    server.seen = []
    server.mcp = request.param == "mcp"
    serve_in_thread(server)
    yield f"http://127.0.0.1:{server.server_address[1]}", request.param, server
    server.shutdown()
    server.server_close()


def backend(url: str, protocol: str, **options) -> HistoryBackend:
    return HistoryBackend(HistoryOptions(url=url, protocol=protocol, **options), home=None)  # type: ignore[arg-type]


def run(history: HistoryBackend):
    started = time.monotonic()
    result = gather([history], "anything", limit=10, timeout=DEADLINE)["history"]
    elapsed = time.monotonic() - started
    assert elapsed < DEADLINE + 1.0
    if result.error is not None:
        assert "\n" not in result.error and len(result.error) < 400
    return result


def assert_direct_failure_within_deadline(history: HistoryBackend) -> None:
    """The client itself stops at the deadline (not only gather's wait)."""
    started = time.monotonic()
    with pytest.raises(Exception):
        history.search("anything", 10, started + DEADLINE)
    assert time.monotonic() - started < DEADLINE + 1.0


def test_a_good_answer_maps_to_items(faulty):
    url, protocol, server = faulty
    result = run(backend(url + "/ok", protocol, token="tok-1"))
    assert result.status == "ok", result.error
    (item,) = result.items
    assert item.id == "msg:s1:u1" and item.meta["uuids"] == ["u1", "u2"] and item.timestamp.tzinfo is not None
    assert item.title == "app · 2026-01-02" and item.score == 1.5 and item.kind == "exchange"
    assert all(auth == "Bearer tok-1" for _, _, _, auth in server.seen)
    if protocol == "mcp":
        methods = [method for _, method, _, _ in server.seen]
        assert methods == ["initialize", "notifications/initialized", "tools/call"]
        assert server.seen[-1][2] == "sess-42"


def test_an_event_stream_answer_is_read_up_to_the_response(faulty):
    url, protocol, _ = faulty
    result = run(backend(url + "/sse-ok", protocol))
    assert result.status == "ok", result.error
    assert [item.id for item in result.items] == ["msg:s1:u1"]


@pytest.mark.parametrize(
    ("fault", "status", "reason"),
    [
        ("http500", "error", "HTTP 500"),
        ("http403", "error", "HTTP 403"),
        ("not-json", "error", "not JSON"),
        ("rpc-error", "error", "server error -32000: index locked"),
        ("wrong-shape", "error", "wrong shape"),
        ("huge", "error", "over 65536 bytes"),
        ("slow", "timeout", ""),
        ("sse-endless", "timeout", ""),
        ("trickle", "timeout", ""),
    ],
)
def test_each_fault_becomes_a_one_line_result(faulty, fault, status, reason):
    url, protocol, _ = faulty
    history = backend(f"{url}/{fault}", protocol, max_response_bytes=65536)
    result = run(history)
    assert result.status == status, result
    assert reason in (result.error or "")
    assert_direct_failure_within_deadline(backend(f"{url}/{fault}", protocol, max_response_bytes=65536))


def test_connection_refused_is_an_error():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = run(backend(f"http://127.0.0.1:{port}/rpc", "jsonrpc"))
    assert result.status == "error" and "connection refused" in result.error


def test_a_server_that_never_accepts_is_a_timeout():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)  # the kernel completes the handshake; nobody ever reads or answers
        history = backend(f"http://127.0.0.1:{listener.getsockname()[1]}/rpc", "mcp")
        result = run(history)
        assert result.status == "timeout"
        assert_direct_failure_within_deadline(history)
