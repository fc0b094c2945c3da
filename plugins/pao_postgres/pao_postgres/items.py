"""Observations as pao's memory items (standard library and pao_core only)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pao_core.contracts import MAX_OBSERVATION_CHARS
from pao_core.models import MemoryItem

# A longer observation is refused by import, add and remember, and cut (ending in an ellipsis) when the
# memory file brings it: a briefing quotes a few hundred characters of each; megabytes made every search slow.


def cut_observation(text: str) -> str:
    """``text`` at most :data:`MAX_OBSERVATION_CHARS` long: cut, with an ellipsis that says so."""
    return text if len(text) <= MAX_OBSERVATION_CHARS else text[: MAX_OBSERVATION_CHARS - 1] + "\u2026"


def observation_too_long(text: str) -> str | None:
    """Why ``text`` is refused as an observation (its length over the limit), or None."""
    if len(text) <= MAX_OBSERVATION_CHARS:
        return None
    return (f"an observation of {len(text):,} characters is over the limit of {MAX_OBSERVATION_CHARS:,} "
            "(MAX_OBSERVATION_CHARS); shorten or split it")


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
