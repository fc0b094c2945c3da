"""The spawn pipeline, step by step. ``brief`` is steps 2-3 (gather, compose)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Sequence

from pao_core import briefing as briefing_mod
from pao_core.gather import gather

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_core.contracts import MemoryBackend
    from pao_core.models import Briefing
    from pao_core.plugins import Plugins


def brief(
    topic: str,
    *,
    folders: Sequence[str] = (),
    config: PaoConfig,
    plugins: Plugins,
    backends: Sequence[MemoryBackend] | None = None,
) -> Briefing:
    """Gather memory for ``topic`` from every backend in parallel and compose the briefing."""
    started = time.monotonic()
    chosen = plugins.memory_backends(config) if backends is None else backends
    results = gather(chosen, topic, limit=config.gather.limit, timeout=config.gather.deadline)
    return briefing_mod.compose(
        topic,
        folders=tuple(folders),
        results=results,
        config=config,
        plugins=plugins,
        started=started,
    )
