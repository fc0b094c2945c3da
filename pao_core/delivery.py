"""Step 4 of the pipeline: the briefing file and a reference to it in the host's context file.

Minimal placeholder with the briefing branch's signature, for the lifecycle tests
until that branch lands; the lead keeps the briefing branch's version. Writes are
atomic; the context file is appended to, never overwritten, and only once.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from pao_core.files import atomic_write

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_core.models import Briefing
    from pao_core.plugins import Plugins


@attrs.frozen
class Delivery:
    folder: Path
    briefing_path: Path
    context_path: Path


def deliver(
    briefing: Briefing,
    folder: str | os.PathLike[str],
    *,
    config: PaoConfig,
    context_file: str = "CLAUDE.md",
    context_block: str | None = None,
    plugins: Plugins | None = None,
) -> Delivery:
    """Write ``CONTEXT_BRIEFING.md`` and reference it from ``context_file``; fire ``pao_briefing_written``."""
    target = Path(folder)
    briefing_path = target / config.briefing.filename
    context_path = target / context_file
    block = context_block if context_block is not None else f"@{config.briefing.filename}\n"
    atomic_write(briefing_path, briefing.markdown)
    current = context_path.read_text(encoding="utf-8") if context_path.exists() else ""
    if block.strip() not in current:
        joiner = "" if not current or current.endswith("\n\n") else ("\n" if current.endswith("\n") else "\n\n")
        atomic_write(context_path, current + joiner + block)
    if plugins is not None:
        plugins.briefing_written(briefing, str(target), str(briefing_path))
    return Delivery(target, briefing_path, context_path)
