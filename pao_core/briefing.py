"""Step 3 of the pipeline: turn gathered results into one markdown briefing."""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import time
from typing import TYPE_CHECKING, Mapping

from pao_core.models import BackendResult, Briefing, MemoryItem

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_core.plugins import Plugins


def interleave(results: Mapping[str, BackendResult]) -> tuple[MemoryItem, ...]:
    """Items of every backend that answered, taken in turns by rank."""
    ranked = [sorted(r.items, key=lambda item: item.rank) for r in results.values() if r.status == "ok"]
    merged = itertools.chain.from_iterable(itertools.zip_longest(*ranked))
    return tuple(item for item in merged if item is not None)


def render_plain(topic: str, items: tuple[MemoryItem, ...]) -> str:
    lines = [f"# Context briefing: {topic}", ""]
    for item in items:
        when = item.timestamp.date().isoformat() if item.timestamp else "undated"
        lines.append(f"- **{item.title}** ({item.backend}, {when}): {item.text}")
    return "\n".join(lines) + "\n"


def compose(
    topic: str,
    *,
    folders: tuple[str, ...],
    results: Mapping[str, BackendResult],
    config: PaoConfig,
    plugins: Plugins,
    started: float,
) -> Briefing:
    items = interleave(results)
    markdown = render_plain(topic, items)
    return Briefing(
        topic=topic,
        markdown=markdown,
        items=items,
        backends=dict(results),
        elapsed_ms=round((time.monotonic() - started) * 1000, 2),
        folders=folders,
        content_hash=hashlib.sha256(markdown.encode()).hexdigest(),
        generated_at=dt.datetime.now(dt.timezone.utc),
    )
