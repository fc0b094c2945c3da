"""Step 4 of the pipeline: the briefing file and a reference to it in the host's context file.

Minimal placeholder until the briefing branch's delivery lands (same signature); the
lead reconciles the two. Writes are atomic; the context file is appended, never
overwritten, and only once.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from pao_core.files import atomic_write

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_core.models import Briefing


def deliver(briefing: Briefing, folder: str, *, config: PaoConfig, context_file: str, context_block: str) -> str:
    """Write ``CONTEXT_BRIEFING.md`` and reference it from ``context_file``; return the briefing path."""
    path = os.path.join(folder, config.briefing.filename)
    atomic_write(path, briefing.markdown)
    context_path = os.path.join(folder, context_file)
    try:
        with open(context_path, encoding="utf-8") as handle:
            current = handle.read()
    except FileNotFoundError:
        current = ""
    if context_block.strip() not in current:
        joiner = "" if not current or current.endswith("\n\n") else ("\n" if current.endswith("\n") else "\n\n")
        atomic_write(context_path, current + joiner + context_block)
    return path
