"""``pao mcp``: the memory tools over MCP's stdio transport, with the official ``mcp`` SDK.

The SDK does the protocol (the ``initialize`` handshake and its version negotiation,
JSON-RPC framing, ``tools/list``, ``ping``, cancellation); this module declares the
tools with their JSON Schemas and annotations, validates each call's arguments
against its schema, and turns failures into MCP errors: an unknown tool is a
protocol error (invalid params), while bad arguments and a store's failure are tool
results with ``isError`` set, which the model reads and can correct.
"""

from __future__ import annotations

import json
import logging
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

import anyio
import jsonschema
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from pao_core.errors import PaoError
from pao_core.sanitize import clean_inline
from pao_mcp.tools import DESCRIPTIONS, SCHEMAS, MemoryTools

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

logger = logging.getLogger("pao_mcp")

SERVER_NAME = "pao"
MAX_ARGUMENTS_BYTES = 16_000
"""A call's arguments, as JSON, at most this long (each field has its own maxLength too)."""
MAX_MESSAGE_BYTES = 1_000_000
"""A JSON-RPC message on stdin at most this long: a longer line is skipped, unparsed, and answered as invalid."""

_ANNOTATIONS = {
    "search_memory": types.ToolAnnotations(title="Search memory", read_only_hint=True, open_world_hint=False),
    "remember": types.ToolAnnotations(
        title="Remember a fact", read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    ),
    "memory_status": types.ToolAnnotations(title="Memory status", read_only_hint=True, open_world_hint=False),
}
_VALIDATORS = {name: jsonschema.Draft202012Validator(schema) for name, schema in SCHEMAS.items()}


def tool_list() -> list[types.Tool]:
    return [
        types.Tool(name=name, description=DESCRIPTIONS[name], input_schema=schema, annotations=_ANNOTATIONS[name])
        for name, schema in SCHEMAS.items()
    ]


def _failure(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def argument_problem(name: str, arguments: dict[str, Any]) -> str | None:
    """Why ``arguments`` do not fit tool ``name``'s schema and size bound, or ``None``."""
    size = len(json.dumps(arguments, ensure_ascii=False))
    if size > MAX_ARGUMENTS_BYTES:
        return f"arguments too large ({size} characters; at most {MAX_ARGUMENTS_BYTES})"
    error = jsonschema.exceptions.best_match(_VALIDATORS[name].iter_errors(arguments))
    if error is None:
        return None
    where = "/".join(str(part) for part in error.absolute_path) or "arguments"
    bound = error.validator_value
    said = {
        "maxLength": f"longer than {bound} characters",
        "minLength": f"shorter than {bound} characters",
        "maximum": f"more than {bound}",
        "minimum": f"less than {bound}",
    }.get(str(error.validator), error.message)  # the value itself is not repeated back at length
    return f"invalid {where}: {said[:300]}"


def build_server(tools: MemoryTools) -> Server:
    async def list_tools(ctx: ServerRequestContext, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_list())

    async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in SCHEMAS:
            raise MCPError(code=types.INVALID_PARAMS, message=f"unknown tool: {params.name[:100]!r}")
        arguments = dict(params.arguments or {})
        problem = argument_problem(params.name, arguments)
        if problem:
            return _failure(f"{params.name}: {problem}")
        try:
            # the stores block (sockets, SQLite): off the event loop, so pings and cancellations get through
            answer = await anyio.to_thread.run_sync(tools.call, params.name, arguments, abandon_on_cancel=True)
        except PaoError as exc:
            return _failure(f"{params.name}: {exc}")
        except Exception as exc:  # a bug or a store's surprise: the agent reads one line, stderr the traceback
            logger.exception("%s failed", params.name)
            return _failure(f"{params.name} failed: {type(exc).__name__}: {clean_inline(str(exc))[:300]}")
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=answer.text)], structured_content=dict(answer.data)
        )

    return Server(
        SERVER_NAME,
        version=_version(),
        instructions=(
            "The user's memory: search_memory finds what they and earlier agents learned (with source and date); "
            "remember stores a fact for later agents, with your name and session."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


class BoundedLines:
    """stdin as UTF-8 lines of at most ``limit`` bytes; a longer line is read to its end
    and dropped, and what is handed on in its place fails JSON-RPC parsing."""

    def __init__(self, binary: Any, limit: int = MAX_MESSAGE_BYTES) -> None:
        self._binary, self._limit = binary, limit

    def readline(self) -> str:
        line = self._binary.readline(self._limit + 1)
        if len(line) > self._limit and not line.endswith(b"\n"):
            while (rest := self._binary.readline(65536)) and not rest.endswith(b"\n"):
                pass
            return "oversized message\n"
        return line.decode("utf-8", errors="replace")


def serve(tools: MemoryTools) -> None:
    """Serve on stdin/stdout until the client closes them."""
    server = build_server(tools)
    stdin = anyio.wrap_file(BoundedLines(sys.stdin.buffer))  # type: ignore[arg-type]

    async def run() -> None:
        async with stdio_server(stdin=stdin) as (read_stream, write_stream):
            valid_in, valid_out = anyio.create_memory_object_stream[Any](0)

            async def answer_invalid() -> None:  # the SDK drops a line it cannot read: the spec wants an answer
                async with valid_in:
                    async for item in read_stream:
                        if isinstance(item, Exception):
                            await write_stream.send(invalid_answer(item))
                        else:
                            await valid_in.send(item)

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(answer_invalid)
                await server.run(valid_out, write_stream, server.create_initialization_options())
                tasks.cancel_scope.cancel()

    anyio.run(run)


def invalid_answer(error: Exception) -> Any:
    """The JSON-RPC 2.0 answer to a line that is not a request: -32700 (not JSON) or -32600, id null."""
    from mcp.shared.message import SessionMessage  # only when a client sent something unreadable

    errors = error.errors() if hasattr(error, "errors") else []
    parse = any(entry.get("type") == "json_invalid" for entry in errors)
    code, message = (types.PARSE_ERROR, "Parse error") if parse else (types.INVALID_REQUEST, "Invalid Request")
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(code=code, message=message)))


def _version() -> str:
    try:
        return version("pao-mcp")
    except PackageNotFoundError:
        return "0"
