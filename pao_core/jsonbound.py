"""JSON from outside pao parsed with a depth bound: too deep is a ``ValueError``, never a ``RecursionError``."""

from __future__ import annotations

import json
from typing import Any

MAX_JSON_DEPTH = 64
"""The deepest nesting of arrays and objects pao reads from untrusted JSON (pao's own formats need 4)."""


class TooDeep(ValueError):
    """The JSON nests arrays or objects deeper than :data:`MAX_JSON_DEPTH`."""


def loads(data: str | bytes, **options: Any) -> Any:
    """``json.loads(data, **options)``, or :class:`TooDeep` (iteratively checked: no recursion of its own)."""
    try:
        value = json.loads(data, **options)
    except RecursionError:
        raise TooDeep(f"nested deeper than {MAX_JSON_DEPTH} levels") from None
    brackets = (b"[", b"{") if isinstance(data, bytes) else ("[", "{")
    level, pending = [value] if isinstance(value, (dict, list)) else [], sum(map(data.count, brackets)) > MAX_JSON_DEPTH  # fewer cannot nest too deep
    for _ in range(MAX_JSON_DEPTH if pending else 0):
        level = [child for node in level for child in (node.values() if isinstance(node, dict) else node)
                 if isinstance(child, (dict, list))]
    if level and pending:
        raise TooDeep(f"nested deeper than {MAX_JSON_DEPTH} levels")
    return value
