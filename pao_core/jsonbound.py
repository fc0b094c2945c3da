"""JSON from outside pao (memory files, transcripts, event logs, requests), parsed with a depth bound.

A line nested thousands deep would otherwise raise ``RecursionError`` (a traceback, or a
reader that gives up on a whole file); here it is a ``ValueError`` like any other bad line.
"""

from __future__ import annotations

import json
from typing import Any

MAX_JSON_DEPTH = 64
"""The deepest nesting of arrays and objects pao reads from untrusted JSON (pao's own formats need 4)."""


class TooDeep(ValueError):
    """The JSON nests arrays or objects deeper than :data:`MAX_JSON_DEPTH`."""


def loads(data: str | bytes, *, max_depth: int = MAX_JSON_DEPTH, **options: Any) -> Any:
    """``json.loads(data, **options)``, or :class:`TooDeep` when it nests deeper than ``max_depth``."""
    try:
        value = json.loads(data, **options)
    except RecursionError:
        raise TooDeep(f"nested deeper than {max_depth} levels") from None
    opened = data.count(b"[") + data.count(b"{") if isinstance(data, bytes) else data.count("[") + data.count("{")
    if opened <= max_depth:  # fewer brackets than the limit cannot nest deeper: the usual line costs no walk
        return value
    pending = [(value, 1)]
    while pending:  # iterative: the check itself must not recurse
        node, depth = pending.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        for child in children:
            if isinstance(child, (dict, list)):
                if depth + 1 > max_depth:
                    raise TooDeep(f"nested deeper than {max_depth} levels")
                pending.append((child, depth + 1))
    return value
