"""pao: spawn terminal coding agents that start knowing what matters.

The public API. Importing this package is cheap: no plugin, database driver,
terminal library or HTTP client is imported until it is used, and the records below
load on first access (``pao --help`` needs none of them).
"""

from __future__ import annotations

import importlib
from typing import Any

_PUBLIC = {
    "BackendResult": "pao_core.models",
    "Briefing": "pao_core.models",
    "BriefingContext": "pao_core.models",
    "MemoryItem": "pao_core.models",
    "hookimpl": "pao_core.hookspecs",
    **{name: "pao_core.contracts" for name in (
        "BriefingSection", "MemoryBackend")},
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'pao_core' has no attribute {name!r}")
