"""The wire format shared by ``pao history serve`` and the client (docs/history-protocol.md)."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any, Mapping

from pao_core.models import MemoryItem

from pao_historyworker.options import DEFAULT_METHOD, DEFAULT_TOOL

MCP_PROTOCOL_VERSION = "2025-06-18"
SESSION_HEADER = "Mcp-Session-Id"
STATS_METHOD = "stats"
STATS_TOOL = "history_stats"
MAX_LIMIT = 100

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
UNAUTHORIZED = -32001
UNKNOWN_SESSION = -32002

SEARCH_INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "what to look for, in plain words"},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": 10},
    },
    "required": ["query"],
}
TOOLS = [
    {"name": DEFAULT_TOOL, "description": "Search past coding-agent conversations.", "inputSchema": SEARCH_INPUT_SCHEMA},
    {"name": STATS_TOOL, "description": "Counts of the conversation index.", "inputSchema": {"type": "object"}},
]
SEARCH_METHOD = DEFAULT_METHOD


class ProtocolError(Exception):
    """The other side broke the protocol (a one-line reason)."""


def item_to_wire(item: MemoryItem) -> dict[str, Any]:
    meta = item.meta
    return {
        "id": item.id,
        "session_id": meta.get("session_id"),
        "project": meta.get("project"),
        "cwd": meta.get("cwd"),
        "git_branch": meta.get("git_branch"),
        "timestamp": item.timestamp.isoformat() if item.timestamp else None,
        "title": item.title,
        "text": item.text,
        "score": item.score,
        "uuids": list(meta.get("uuids") or []),
    }


def _text(raw: Mapping[str, Any], key: str, position: int, *, required: bool = False) -> str:
    value = raw.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value):
        raise ProtocolError(f"result of the wrong shape: items[{position}].{key} is not a string")
    return value


def item_from_wire(raw: Any, position: int, backend: str) -> MemoryItem:
    """A MemoryItem from one element of ``result.items``; ProtocolError when it is malformed."""
    if not isinstance(raw, Mapping):
        raise ProtocolError(f"result of the wrong shape: items[{position}] is {type(raw).__name__}, not an object")
    stamp = _text(raw, "timestamp", position)
    try:
        timestamp = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")) if stamp else None
    except ValueError:
        raise ProtocolError(f"result of the wrong shape: items[{position}].timestamp is not ISO 8601") from None
    if timestamp is not None and timestamp.tzinfo is None:
        timestamp = timestamp.replace(tzinfo=dt.timezone.utc)
    score = raw.get("score", 0.0)
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        raise ProtocolError(f"result of the wrong shape: items[{position}].score is not a number")
    uuids = raw.get("uuids") or []
    if not isinstance(uuids, list) or not all(isinstance(u, str) for u in uuids):
        raise ProtocolError(f"result of the wrong shape: items[{position}].uuids is not a list of strings")
    project = _text(raw, "project", position)
    return MemoryItem(
        backend=backend,
        id=_text(raw, "id", position, required=True),
        title=_text(raw, "title", position) or project,
        text=_text(raw, "text", position, required=True),
        kind="exchange",
        timestamp=timestamp,
        score=float(score),
        rank=position + 1,
        meta={
            "session_id": _text(raw, "session_id", position),
            "project": project,
            "cwd": _text(raw, "cwd", position),
            "git_branch": _text(raw, "git_branch", position),
            "uuids": uuids,
        },
    )


def items_from_result(result: Any, backend: str) -> list[MemoryItem]:
    """The items of a search result ``{"items": [...]}``."""
    if not isinstance(result, Mapping) or not isinstance(result.get("items"), list):
        raise ProtocolError("result of the wrong shape: expected an object with an 'items' list")
    return [item_from_wire(raw, position, backend) for position, raw in enumerate(result["items"])]


def error_body(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def result_body(request_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}
