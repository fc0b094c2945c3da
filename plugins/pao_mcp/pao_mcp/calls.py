"""``tools/call``: a call's arguments checked against the tool's schema and size bound, the tool run, and
its answer or failure as the protocol's ``CallToolResult``.

An unknown tool is a protocol error (invalid params); bad arguments and a store's
failure are results with ``isError`` set, which the model reads and can correct.
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any

import jsonschema

from pao_core.errors import PaoError
from pao_core.sanitize import clean_inline
from pao_mcp.catalog import SCHEMAS
from pao_mcp.stdio import INVALID_PARAMS, ProtocolError
from pao_mcp.tools import MemoryTools

MAX_ARGUMENTS_BYTES = 16_000
"""A call's arguments, as JSON, at most this long (each field has its own maxLength too)."""

_VALIDATORS = {name: jsonschema.Draft202012Validator(schema) for name, schema in SCHEMAS.items()}


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


def call_tool(tools: MemoryTools, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The ``CallToolResult`` of tool ``name`` on ``arguments``; a name not served is a protocol error."""
    if name not in SCHEMAS:
        raise ProtocolError(INVALID_PARAMS, f"unknown tool: {name[:100]!r}")
    problem = argument_problem(name, arguments)
    if problem:
        return failure(f"{name}: {problem}")
    try:
        answer = tools.call(name, arguments)
    except PaoError as exc:
        return failure(f"{name}: {exc}")
    except Exception as exc:  # a bug or a store's surprise: the agent reads one line, stderr the traceback
        traceback.print_exc(file=sys.stderr)
        return failure(f"{name} failed: {type(exc).__name__}: {clean_inline(str(exc))[:300]}")
    return {"content": [{"type": "text", "text": answer.text}], "structuredContent": dict(answer.data), "isError": False}


def failure(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}
