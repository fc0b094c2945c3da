"""MCP over stdio, the part pao serves: ``initialize``, ``ping``, ``tools/list``, ``tools/call`` and the
client's notifications (``notifications/initialized``, ``notifications/cancelled``).

One JSON-RPC 2.0 message per line on stdin, one answer per line on stdout. The standard
library only, so the handshake is answered within tens of milliseconds of the start: the
official SDK took ~2 s to import here, longer than a CLI waits before its first request
(docs/mcp.md). The tool list and the tools themselves come from :class:`Later` values that
another thread fills (:mod:`pao_mcp.start`); a request that needs one waits for it.

What the specification asks of a server and this one does: a line that is not JSON is
answered ``-32700`` and one that is not a request ``-32600``, both with ``id`` null (an ``id``
that is not a string or an integer, a batch, a missing ``method``); an unknown method is
``-32601``; bad parameters ``-32602``. The protocol version the client offers is agreed if
known, else the newest one known is offered back. A cancelled call gets no answer.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import traceback
from typing import Any, BinaryIO, Callable

from pao_core.jsonbound import loads  # its depth bound: a deep nesting is unreadable, never a RecursionError
from pao_mcp import SERVER_NAME, __version__

PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The revisions agreed through ``initialize``, oldest first (the newest is offered to a client that knows none)."""
INSTRUCTIONS = ("The user's memory: search_memory finds what they and earlier agents learned (with source and date); "
                "remember stores a fact for later agents, with your name and session.")
MAX_MESSAGE_BYTES = 1_000_000
"""A JSON-RPC message on stdin at most this long: a longer line is skipped, unparsed, and answered as invalid."""
MAX_CALLS = 4
"""Tool calls run at once (each on its own thread); more wait for one to end."""
READY_SECONDS = 120.0
"""How long a request waits for the tool list or the tools to be ready."""

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603
MESSAGES = {PARSE_ERROR: "Parse error", INVALID_REQUEST: "Invalid Request"}


class Later:
    """A value another thread makes: :meth:`get` waits for it (or raises what making it raised)."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._value: Any = None
        self._error: BaseException | None = None

    @classmethod
    def of(cls, value: Any) -> Later:
        made = cls()
        made.set(value)
        return made

    def set(self, value: Any = None, error: BaseException | None = None) -> None:
        self._value, self._error = value, error
        self._done.set()

    def get(self, timeout: float = READY_SECONDS) -> Any:
        if not self._done.wait(timeout):
            raise TimeoutError(f"not ready after {timeout:.0f} s")
        if self._error is not None:
            raise self._error
        return self._value


class ProtocolError(Exception):
    """A request answered with a JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def read_lines(binary: BinaryIO, limit: int = MAX_MESSAGE_BYTES):  # noqa: ANN201 - a generator of bytes
    """stdin's lines of at most ``limit`` bytes; a longer one is read to its end and stands as ``None``."""
    while line := binary.readline(limit + 1):
        if len(line) > limit and not line.endswith(b"\n"):
            while (rest := binary.readline(65536)) and not rest.endswith(b"\n"):
                pass
            yield None
        else:
            yield line


class Output:
    """stdout, one JSON message per line, written whole by one thread at a time."""

    def __init__(self, binary: BinaryIO) -> None:
        self._binary, self._lock = binary, threading.Lock()

    def answer(self, ident: Any, result: dict[str, Any]) -> None:
        self._write({"jsonrpc": "2.0", "id": ident, "result": result})

    def error(self, ident: Any, code: int, message: str) -> None:
        self._write({"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}})

    def _write(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8") + b"\n"
        with self._lock:
            try:
                self._binary.write(line)
                self._binary.flush()
            except (BrokenPipeError, ValueError):  # the client is gone: nothing is left to tell it
                pass


def request_of(line: bytes | None) -> dict[str, Any] | int:
    """The message on ``line``, or the error code its answer gets (:data:`PARSE_ERROR`, :data:`INVALID_REQUEST`)."""
    if line is None:
        return PARSE_ERROR
    try:
        message = loads(line.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return PARSE_ERROR
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return INVALID_REQUEST
    if "method" not in message:  # an answer to the server (it asks nothing) or nothing at all
        return message if "id" in message and ("result" in message or "error" in message) else INVALID_REQUEST
    ident = message.get("id")
    if not isinstance(message["method"], str) or "params" in message and not isinstance(message["params"], dict):
        return INVALID_REQUEST
    if "id" in message and (not isinstance(ident, (str, int)) or isinstance(ident, bool)):
        return INVALID_REQUEST  # MCP: a request's id is a string or an integer, never null
    return message


class Session:
    """One client's conversation: what each method answers."""

    def __init__(self, output: Output, catalog: Later, tools: Later,
                 call: Callable[[Any, str, dict[str, Any]], dict[str, Any]],
                 on_listed: Callable[[float], None] | None = None) -> None:
        self.output, self.catalog, self.tools, self.call, self.on_listed = output, catalog, tools, call, on_listed
        self._running: dict[Any, threading.Thread] = {}
        self._cancelled: set[Any] = set()
        self._slots = threading.BoundedSemaphore(MAX_CALLS)
        self._lock = threading.Lock()
        self._listed = False

    def handle(self, line: bytes | None) -> None:
        message = request_of(line)
        if isinstance(message, int):
            self.output.error(None, message, MESSAGES[message])
            return
        if "method" not in message:
            return  # an answer: this server sends no requests, so there is nothing to match it to
        method, params = message["method"], message.get("params") or {}
        if "id" not in message:
            self._notified(method, params)
            return
        ident = message["id"]
        if method == "tools/call":
            self._start_call(ident, params)
            return
        try:
            self.output.answer(ident, self._answer(method, params))
        except ProtocolError as exc:
            self.output.error(ident, exc.code, str(exc))
            return
        if method == "tools/list" and not self._listed and self.on_listed:
            self._listed = True
            self.on_listed(time.time())

    def _answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "initialize":
            return initialize_result(params)
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": self.catalog.get()}
        raise ProtocolError(METHOD_NOT_FOUND, f"Method not found: {method[:100]}")

    def _notified(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/cancelled":
            with self._lock:
                if params.get("requestId") in self._running:
                    self._cancelled.add(params["requestId"])

    def _start_call(self, ident: Any, params: dict[str, Any]) -> None:
        name, arguments = params.get("name"), params.get("arguments")
        arguments = {} if arguments is None else arguments  # absent or null: a tool without arguments
        if not isinstance(name, str) or not isinstance(arguments, dict):
            self.output.error(ident, INVALID_PARAMS, "tools/call needs a tool name and an object of arguments")
            return
        self._slots.acquire()
        worker = threading.Thread(target=self._run_call, args=(ident, name, arguments), daemon=True)
        with self._lock:
            self._running[ident] = worker
        worker.start()

    def _run_call(self, ident: Any, name: str, arguments: dict[str, Any]) -> None:
        try:
            result = self.call(self.tools.get(), name, arguments)
        except ProtocolError as exc:  # an unknown tool
            self._finish(ident, lambda: self.output.error(ident, exc.code, str(exc)))
        except Exception as exc:  # the tools could not be made (a broken configuration): said to the agent
            traceback.print_exc(file=sys.stderr)
            failure = {"content": [{"type": "text", "text": f"pao mcp cannot run its tools: {exc}"}], "isError": True}
            self._finish(ident, lambda: self.output.answer(ident, failure))
        else:
            self._finish(ident, lambda: self.output.answer(ident, result))

    def _finish(self, ident: Any, send: Callable[[], None]) -> None:
        with self._lock:
            self._running.pop(ident, None)
            cancelled = ident in self._cancelled
            self._cancelled.discard(ident)
        if not cancelled:
            send()
        self._slots.release()

    def drain(self) -> None:
        """Wait for the calls still running (the client closed its input: their answers are still wanted)."""
        with self._lock:
            running = list(self._running.values())
        for worker in running:
            worker.join()


def initialize_result(params: dict[str, Any]) -> dict[str, Any]:
    offered = params.get("protocolVersion")
    if not isinstance(offered, str):
        raise ProtocolError(INVALID_PARAMS, "initialize needs a protocolVersion")
    agreed = offered if offered in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1]
    return {"protocolVersion": agreed, "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": SERVER_NAME, "version": __version__}, "instructions": INSTRUCTIONS}


def serve(catalog: Later, tools: Later, call: Callable[[Any, str, dict[str, Any]], dict[str, Any]],
          on_listed: Callable[[float], None] | None = None) -> None:
    """Answer the client on stdin/stdout until it closes its input, then for the calls still running;
    ``on_listed`` runs once the client has the tool list, with the time it got it."""
    session = Session(Output(sys.stdout.buffer), catalog, tools, call, on_listed)
    for line in read_lines(sys.stdin.buffer):
        session.handle(line)
    session.drain()
