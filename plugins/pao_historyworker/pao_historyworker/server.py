"""``pao history serve``: the local index over HTTP, in both protocol modes at one endpoint.

Plain JSON-RPC (``search``, ``stats``) and MCP over streamable HTTP (``initialize``,
``tools/list``, ``tools/call``) share ``POST /rpc``; docs/history-protocol.md is the
contract. Every request is answered with JSON; bad requests get JSON-RPC errors and
the server keeps serving.

What it accepts (docs/security.md): a bearer token on every request (required by
default); a ``Host`` naming the address it listens on and an ``Origin``, when one is
sent, of that same address (the MCP Streamable HTTP transport requires Origin checks
against DNS rebinding); ``Content-Type: application/json``; at most
``MAX_CONNECTIONS`` connections at once, each idle at most ``IDLE_TIMEOUT`` seconds
and given ``REQUEST_TIMEOUT`` seconds per request from its first byte to the answer.
"""

from __future__ import annotations

import hmac
import json
import socket
import sqlite3
import sys
import threading
import uuid
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from pao_core.jsonbound import loads
from pao_core.sanitize import clean_item
from pao_historyworker import protocol as wire
from pao_historyworker.index import connect, stats
from pao_historyworker.search import Tuning, search

ENDPOINT = "/rpc"
MAX_REQUEST_BYTES = 64 * 1024
MAX_SESSIONS = 10_000
MAX_CONNECTIONS = 32
IDLE_TIMEOUT = 15.0
REQUEST_TIMEOUT = 30.0
LOCAL_NAMES = ("127.0.0.1", "localhost", "[::1]")
SERVER_NAME = "pao-history"


class RequestFailed(Exception):
    """A request the server answers with a JSON-RPC error."""

    def __init__(self, code: int, message: str, status: HTTPStatus = HTTPStatus.OK) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


class HistoryServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 2 * MAX_CONNECTIONS  # the stdlib's 5 kept a burst of clients in SYN retries (1 s, 3 s...)

    def __init__(self, address: tuple[str, int], index: Path, token: str | None, semantic: bool = True, *,
                 idle_timeout: float = IDLE_TIMEOUT, request_timeout: float = REQUEST_TIMEOUT) -> None:
        super().__init__(address, HistoryHandler)
        self.index = index
        self.token = token
        self.idle_timeout = idle_timeout
        self.request_timeout = request_timeout
        self.semantic = semantic
        self.sessions: set[str] = set()
        self.sessions_lock = threading.Lock()
        self._local = threading.local()
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def process_request(self, request: Any, client_address: Any) -> None:
        """Refuse a connection beyond ``MAX_CONNECTIONS`` at once (closed unanswered), serve the rest."""
        if not self.slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up mid-answer is no fault of the server's; anything else is one line, not a traceback."""
        error = sys.exc_info()[1]
        if not isinstance(error, ConnectionError):
            sys.stderr.write(f"pao: history server: {type(error).__name__}: {error}\n")

    def allowed_hosts(self) -> set[str]:
        """``Host`` values naming this server: its address and port (localhost names when on loopback)."""
        host, port = self.server_address[:2]
        shown = f"[{host}]" if ":" in str(host) else str(host)
        names = {shown, *LOCAL_NAMES} if shown in LOCAL_NAMES else {shown}
        return {f"{name}:{port}" for name in names}

    def connection(self) -> sqlite3.Connection:
        """This thread's connection to the index (one per client connection: keep-alive reuses it)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = connect(self.index)
        return conn

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        shown = f"[{host}]" if ":" in str(host) else host
        return f"http://{shown}:{port}{ENDPOINT}"

    def new_session(self) -> str:
        session = uuid.uuid4().hex
        with self.sessions_lock:
            if len(self.sessions) >= MAX_SESSIONS:
                self.sessions.clear()
            self.sessions.add(session)
        return session

    def knows_session(self, session: str | None) -> bool:
        with self.sessions_lock:
            return session in self.sessions


def make_server(
    index: Path, host: str = "127.0.0.1", port: int = 0, *, token: str | None = None, semantic: bool = True,
    idle_timeout: float = IDLE_TIMEOUT, request_timeout: float = REQUEST_TIMEOUT,
) -> HistoryServer:
    return HistoryServer((host, port), index, token, semantic, idle_timeout=idle_timeout,
                         request_timeout=request_timeout)


class HistoryHandler(BaseHTTPRequestHandler):
    server: HistoryServer
    protocol_version = "HTTP/1.1"
    server_version = SERVER_NAME
    disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms delayed-ACK stall
    timeout = IDLE_TIMEOUT  # a silent connection is closed, and never holds a thread for long

    def setup(self) -> None:
        self.timeout = self.server.idle_timeout
        super().setup()

    def handle_one_request(self) -> None:
        """One request, cut off ``request_timeout`` seconds after its first byte arrived (a slow sender
        cannot hold the thread by trickling bytes within the idle timeout)."""
        try:
            if not self.rfile.peek(1):
                self.close_connection = True
                return
        except (OSError, ValueError):
            self.close_connection = True
            return
        timer = threading.Timer(self.server.request_timeout, self._cut_off)
        timer.daemon = True
        timer.start()
        try:
            super().handle_one_request()
        finally:
            timer.cancel()

    def _cut_off(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        return  # quiet: the first stdout line belongs to PAO_HISTORY_URL

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Errors the stdlib detects (a malformed request line, bad headers) as JSON-RPC errors too."""
        self.close_connection = True
        self.request_version = self.protocol_version  # answer an unparsable request line with HTTP/1.1 too
        reason = message or HTTPStatus(code).phrase
        self._send(HTTPStatus(code), wire.error_body(None, wire.INVALID_REQUEST, reason))

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, wire.error_body(None, wire.INVALID_REQUEST, "use POST"))

    def do_DELETE(self) -> None:  # noqa: N802 - the stdlib's name
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, wire.error_body(None, wire.INVALID_REQUEST, "sessions are not deleted"))

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        request_id: Any = None
        headers: dict[str, str] = {}
        try:
            message = self._read_message()
            request_id = message.get("id")
            if "id" not in message:
                self._send(HTTPStatus.ACCEPTED, None)
                return
            result, headers = self._dispatch(message)
            body, status = wire.result_body(request_id, result), HTTPStatus.OK
        except RequestFailed as exc:
            body, status = wire.error_body(request_id, exc.code, str(exc)), exc.status
        except Exception as exc:  # the server keeps serving whatever one request did
            body, status = wire.error_body(request_id, wire.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"), HTTPStatus.OK
        self._send(status, body, headers)

    def _check_origin(self) -> None:
        """``Host`` must name this server, ``Origin`` (sent by browsers) must be this server: a web
        page that rebinds a name to 127.0.0.1 gets 403 (MCP Streamable HTTP transport, Security)."""
        allowed = self.server.allowed_hosts()
        if self.headers.get("Host", "").lower() not in allowed:
            self.close_connection = True
            raise RequestFailed(wire.INVALID_REQUEST, "Host is not this server", HTTPStatus.FORBIDDEN)
        origin = self.headers.get("Origin")
        if origin is not None and origin.lower() not in {f"http://{host}" for host in allowed}:
            self.close_connection = True
            raise RequestFailed(wire.INVALID_REQUEST, "Origin is not allowed", HTTPStatus.FORBIDDEN)

    def _read_message(self) -> dict[str, Any]:
        self._check_origin()
        if self.path.split("?", 1)[0] != ENDPOINT:
            self.close_connection = True
            raise RequestFailed(wire.INVALID_REQUEST, f"no endpoint {self.path}; use {ENDPOINT}", HTTPStatus.NOT_FOUND)
        if self.headers.get_content_type() != "application/json":
            self.close_connection = True  # the unread body must not be parsed as the next request
            raise RequestFailed(wire.INVALID_REQUEST, "Content-Type must be application/json",
                                HTTPStatus.UNSUPPORTED_MEDIA_TYPE)
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self.close_connection = True
            raise RequestFailed(wire.INVALID_REQUEST, "Content-Length required", HTTPStatus.LENGTH_REQUIRED)
        if int(length) > MAX_REQUEST_BYTES:
            self.close_connection = True  # the unread body must not be parsed as the next request
            raise RequestFailed(
                wire.INVALID_REQUEST, f"request over {MAX_REQUEST_BYTES} bytes", HTTPStatus.REQUEST_ENTITY_TOO_LARGE
            )
        raw = self.rfile.read(int(length))
        if self.server.token and not self._authorized():
            raise RequestFailed(wire.UNAUTHORIZED, "missing or wrong bearer token", HTTPStatus.UNAUTHORIZED)
        try:
            message = loads(raw)  # nested deeper than the bound: a parse error, as the spec's -32700
        except (ValueError, UnicodeDecodeError) as exc:
            raise RequestFailed(wire.PARSE_ERROR, f"body is not JSON ({exc})"[:200]) from None
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
            raise RequestFailed(wire.INVALID_REQUEST, "expected one JSON-RPC 2.0 request object")
        if isinstance(message.get("id"), (bool, dict, list)):  # JSON-RPC 2.0: a string, a number or null
            raise RequestFailed(wire.INVALID_REQUEST, "id must be a string, a number or null")
        return message

    def _authorized(self) -> bool:
        given = self.headers.get("Authorization", "")
        expected = f"Bearer {self.server.token}"
        return hmac.compare_digest(given.encode(), expected.encode())

    def _dispatch(self, message: dict[str, Any]) -> tuple[Any, dict[str, str]]:
        method, params = message["method"], message.get("params") or {}
        if not isinstance(params, dict):
            raise RequestFailed(wire.INVALID_PARAMS, "params must be an object")
        if method == wire.SEARCH_METHOD:
            return self._search(params), {}
        if method == wire.STATS_METHOD:
            return self._stats(), {}
        if method == "ping":
            return {}, {}
        if method == "initialize":
            session = self.server.new_session()
            result = {
                "protocolVersion": wire.MCP_PROTOCOL_VERSION,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": SERVER_NAME, "version": "1"},
            }
            return result, {wire.SESSION_HEADER: session}
        if method in ("tools/list", "tools/call"):
            if not self.server.knows_session(self.headers.get(wire.SESSION_HEADER)):
                raise RequestFailed(wire.UNKNOWN_SESSION, "unknown or missing Mcp-Session-Id; initialize first", HTTPStatus.NOT_FOUND)
            return (self._call_tool(params) if method == "tools/call" else {"tools": wire.TOOLS}), {}
        raise RequestFailed(wire.METHOD_NOT_FOUND, f"no method {method!r}")

    def _call_tool(self, params: dict[str, Any]) -> dict[str, Any]:
        name, arguments = params.get("name"), params.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise RequestFailed(wire.INVALID_PARAMS, "arguments must be an object")
        if name == wire.TOOLS[0]["name"]:
            result = self._search(arguments)
        elif name == wire.STATS_TOOL:
            result = self._stats()
        else:
            raise RequestFailed(wire.INVALID_PARAMS, f"no tool {name!r}")
        return {"content": [{"type": "text", "text": json.dumps(result)}], "structuredContent": result, "isError": False}

    def _search(self, params: dict[str, Any]) -> dict[str, Any]:
        query, limit = params.get("query"), params.get("limit", 10)
        if not isinstance(query, str) or not query.strip():
            raise RequestFailed(wire.INVALID_PARAMS, "query must be a non-empty string")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= wire.MAX_LIMIT:
            raise RequestFailed(wire.INVALID_PARAMS, f"limit must be an integer from 1 to {wire.MAX_LIMIT}")

        items = search(self.server.connection(), query, limit, Tuning(semantic=self.server.semantic))
        return {"items": [wire.item_to_wire(clean_item(item)) for item in items]}

    def _stats(self) -> dict[str, Any]:
        return stats(self.server.connection(), self.server.index)

    def _send(self, status: HTTPStatus, body: dict[str, Any] | None, headers: dict[str, str] | None = None) -> None:
        payload = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(payload)
