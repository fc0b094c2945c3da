"""Observations as pao's memory items (standard library and pao_core only)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pao_core.models import MemoryItem


def as_utc(value: dt.datetime | None) -> dt.datetime | None:
    """SQLite returns naive datetimes (stored as UTC): make every timestamp aware."""
    if value is None:
        return None
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    return value.replace(tzinfo=dt.timezone.utc) if value.tzinfo is None else value.astimezone(dt.timezone.utc)


def make_item(entity: str, entity_type: str, text: str, position: int, created: Any, score: float) -> MemoryItem:
    """An observation as pao's memory item (id ``obs:<entity>#<position>``)."""
    return MemoryItem(
        backend="longterm",
        id=f"obs:{entity}#{position}",
        title=entity,
        text=text,
        kind="observation",
        timestamp=as_utc(created),
        score=float(score),
        meta={"entity": entity, "entity_type": entity_type, "position": position},
    )
