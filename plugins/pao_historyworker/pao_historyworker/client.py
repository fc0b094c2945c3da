"""The HTTP client of the history protocol (plain JSON-RPC or MCP over streamable HTTP).

One ``requests.Session`` per backend keeps the connection alive. Every request
gets the time left until the pipeline's deadline as its connect and read timeout,
the body is read in chunks with the deadline and the size cap checked after each,
and nothing is retried once the deadline has passed. Every failure becomes an
exception with a one-line reason.
"""

from __future__ import annotations

import itertools
import json
import time
from typing import TYPE_CHECKING, Any, Iterator

import attrs

from pao_historyworker import protocol as wire
from pao_historyworker.options import HistoryOptions

if TYPE_CHECKING:
    import requests

    from pao_core.models import MemoryItem

CHUNK = 16 * 1024
ACCEPT = "application/json, text/event-stream"


class HistoryRequestFailed(RuntimeError):
    """The server could not be reached or broke the protocol (a one-line reason)."""


class HistoryTimeout(TimeoutError):
    """The server did not answer before the deadline."""


@attrs.define
class HistoryClient:
    options: HistoryOptions
    backend: str = "history"
    _session: requests.Session | None = attrs.field(default=None, init=False)
    _mcp_session: str | None = attrs.field(default=None, init=False)
    _initialized: bool = attrs.field(default=False, init=False)
    _ids: Iterator[int] = attrs.field(factory=lambda: itertools.count(1), init=False)

    @property
    def session(self) -> requests.Session:
        if self._session is None:
            import requests  # loads requests on use: start-up stays light

            session = requests.Session()
            session.trust_env = False  # a proxy from the environment must not see the token or the history
            session.headers.update({"Accept": ACCEPT, "Content-Type": "application/json", "User-Agent": "pao-history"})
            session.headers.update(self.options.auth_headers())
            self._session = session
        return self._session

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    # -- the two operations ----------------------------------------------------------

    def search(self, query: str, limit: int, deadline: float) -> list[MemoryItem]:
        if self.options.protocol == "mcp":
            arguments = {self.options.arguments.get("query", "query"): query, self.options.arguments.get("limit", "limit"): limit}
            result = self._tool(self.options.tool, arguments, deadline)
        else:
            result = self.call(self.options.method, {"query": query, "limit": limit}, deadline)
        try:
            return wire.items_from_result(result, self.backend)
        except wire.ProtocolError as exc:
            raise HistoryRequestFailed(str(exc)) from None

    def health(self, deadline: float) -> str:
        if self.options.protocol == "mcp":
            self._ensure_initialized(deadline)
            tools = self.call("tools/list", {}, deadline)
            names = [t.get("name") for t in tools.get("tools", []) if isinstance(t, dict)] if isinstance(tools, dict) else []
            if self.options.tool not in names:
                raise HistoryRequestFailed(f"MCP server at {self.options.url} has no tool {self.options.tool!r}")
            return f"MCP server {self.options.url}: tool {self.options.tool} available"
        stats = self.call(wire.STATS_METHOD, {}, deadline)
        if not isinstance(stats, dict):
            raise HistoryRequestFailed("result of the wrong shape: stats is not an object")
        return f"history server {self.options.url}: {stats.get('exchanges', '?')} exchanges from {stats.get('sessions', '?')} sessions"

    # -- MCP ---------------------------------------------------------------------------

    def _ensure_initialized(self, deadline: float) -> None:
        if self._initialized:
            return
        self._mcp_session = None
        params = {
            "protocolVersion": wire.MCP_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "pao", "version": "1"},
        }
        self.call("initialize", params, deadline)
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"}, deadline)
        self._initialized = True

    def _tool(self, name: str, arguments: dict[str, Any], deadline: float) -> Any:
        self._ensure_initialized(deadline)
        try:
            result = self.call("tools/call", {"name": name, "arguments": arguments}, deadline)
        except _SessionExpired:
            self._initialized = False  # the server forgot us: one fresh handshake, same deadline
            self._ensure_initialized(deadline)
            result = self.call("tools/call", {"name": name, "arguments": arguments}, deadline)
        if not isinstance(result, dict):
            raise HistoryRequestFailed("result of the wrong shape: tools/call result is not an object")
        if result.get("isError"):
            raise HistoryRequestFailed(f"tool {name} failed: {_first_text(result)[:200]}")
        if isinstance(result.get("structuredContent"), dict):
            return result["structuredContent"]
        text = _first_text(result)
        try:
            return json.loads(text)
        except ValueError:
            raise HistoryRequestFailed(f"result of the wrong shape: tool {name} returned no JSON content") from None

    # -- JSON-RPC over HTTP ------------------------------------------------------------

    def call(self, method: str, params: dict[str, Any], deadline: float) -> Any:
        """One JSON-RPC request; its result, or an exception with a one-line reason."""
        request_id = next(self._ids)
        message = self._post({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}, deadline, request_id)
        if message.get("error") is not None:
            error = message["error"]
            if isinstance(error, dict):
                raise HistoryRequestFailed(f"server error {error.get('code')}: {' '.join(str(error.get('message', '')).split())[:200]}")
            raise HistoryRequestFailed(f"server error: {str(error)[:200]}")
        if "result" not in message:
            raise HistoryRequestFailed("response has neither result nor error")
        return message["result"]

    def _post(self, body: dict[str, Any], deadline: float, request_id: int | None = None) -> dict[str, Any]:
        import requests  # loads requests on use: start-up stays light
        import urllib3  # loads urllib3 on use: start-up stays light

        url = self.options.url or ""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise HistoryTimeout(f"no time left to ask {url}")
        headers = {wire.SESSION_HEADER: self._mcp_session} if self._mcp_session else {}
        try:
            with self.session.post(url, data=json.dumps(body), headers=headers, timeout=(remaining, remaining), stream=True) as response:
                if response.headers.get(wire.SESSION_HEADER):
                    self._mcp_session = response.headers[wire.SESSION_HEADER]
                if response.status_code == 404 and self._mcp_session and body.get("method") != "initialize":
                    raise _SessionExpired(f"HTTP 404 from {url}")
                if response.status_code >= 400:
                    raise HistoryRequestFailed(f"HTTP {response.status_code} {response.reason or ''} from {url}".strip())
                if request_id is None:
                    return {}
                kind = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
                if kind == "text/event-stream":
                    return self._read_event_stream(response, request_id, deadline)
                return _parse_json(self._read_body(response, deadline))
        except requests.exceptions.ConnectTimeout:
            raise HistoryTimeout(f"connecting to {url} took longer than the deadline") from None
        except requests.exceptions.ReadTimeout:
            raise HistoryTimeout(f"{url} did not answer within the deadline") from None
        except requests.exceptions.ConnectionError as exc:
            if time.monotonic() >= deadline:  # requests reports a stalled stream as a connection error
                raise HistoryTimeout(f"{url} did not finish answering within the deadline") from None
            raise HistoryRequestFailed(f"cannot reach {url}: {_root_reason(exc)}") from None
        except requests.exceptions.RequestException as exc:
            raise HistoryRequestFailed(f"request to {url} failed: {_root_reason(exc)}") from None
        except urllib3.exceptions.ReadTimeoutError:
            raise HistoryTimeout(f"{url} stopped answering before the deadline") from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise HistoryRequestFailed(f"reading the answer of {url} failed: {_root_reason(exc)}") from None

    def _chunks(self, response: requests.Response, deadline: float) -> Iterator[bytes]:
        """The body as it arrives (``read1`` returns what is there, so a trickle cannot outlive the deadline)."""
        size = 0
        while chunk := response.raw.read1(CHUNK, decode_content=True):
            size += len(chunk)
            if size > self.options.max_response_bytes:
                raise HistoryRequestFailed(f"response over {self.options.max_response_bytes} bytes")
            if time.monotonic() > deadline:
                raise HistoryTimeout("the response was still arriving at the deadline")
            yield chunk

    def _read_body(self, response: requests.Response, deadline: float) -> bytes:
        return b"".join(self._chunks(response, deadline))

    def _read_event_stream(self, response: requests.Response, request_id: int, deadline: float) -> dict[str, Any]:
        """Read server-sent events until the one carrying our response; ignore the others."""
        buffer = b""
        for chunk in self._chunks(response, deadline):
            buffer += chunk.replace(b"\r\n", b"\n")
            while b"\n\n" in buffer:
                event, buffer = buffer.split(b"\n\n", 1)
                data = b"\n".join(line[5:].lstrip(b" ") for line in event.split(b"\n") if line.startswith(b"data:"))
                if not data:
                    continue
                message = _parse_json(data)
                if message.get("id") == request_id and ("result" in message or "error" in message):
                    return message
        raise HistoryRequestFailed("event stream ended without a response")


class _SessionExpired(HistoryRequestFailed):
    """The MCP server no longer knows our session (HTTP 404)."""


def _parse_json(data: bytes) -> dict[str, Any]:
    try:
        message = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise HistoryRequestFailed(f"response is not JSON: {data[:60]!r}") from None
    if not isinstance(message, dict):
        raise HistoryRequestFailed(f"response is a JSON {type(message).__name__}, not a JSON-RPC object")
    return message


def _first_text(result: dict[str, Any]) -> str:
    for block in result.get("content") or []:
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            return block["text"]
    return ""


def _root_reason(exc: BaseException) -> str:
    """The innermost cause of a requests/urllib3 error, on one line."""
    seen = exc
    while seen.__cause__ is not None or (seen.args and isinstance(seen.args[0], BaseException)):
        seen = seen.__cause__ or seen.args[0]
    reason = getattr(seen, "reason", None) or seen
    text = " ".join(str(reason).split())
    if "Connection refused" in text:
        return "connection refused"
    return text[:200] or type(seen).__name__
