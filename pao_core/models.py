"""Records passed between threads, plugins and processes.

Every record is an ``attrs`` frozen class: safe to hand from a worker thread to the
pipeline, and serialised with the one ``converter`` below (JSON state and config).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any, Literal, Mapping

import attrs
import cattrs

BackendStatus = Literal["ok", "timeout", "error"]


def parse_timestamp(value: Any) -> dt.datetime | None:
    """An ISO 8601 string (``Z`` accepted) as an aware datetime (UTC when naive); ``None`` if it is not one."""
    if not isinstance(value, str) or not value:
        return None
    try:
        stamp = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=dt.timezone.utc)


def as_mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """An attrs converter: a record's own copy of a mapping (``None``: empty)."""
    return dict(value or {})


@attrs.frozen
class MemoryItem:
    """One thing a memory backend knows, in the backend's own ranking.

    ``backend`` is the configured backend name (``longterm``, ``history``, ...),
    ``id`` is stable across runs (``obs:<entity>#<n>``, ``msg:<session>:<uuid>``),
    ``rank`` is 1-based within the backend's answer and ``score`` is the backend's
    native score (never compared across backends). ``meta`` belongs to the backend;
    ``fusion`` holds what pao's fusion found out about the item (``fused_score``;
    ``earlier``, ``superseded_by``, ``superseded_on``; ``duplicates``).
    """

    backend: str
    id: str
    title: str
    text: str
    kind: str = ""
    timestamp: dt.datetime | None = None
    score: float = 0.0
    rank: int = 0
    meta: Mapping[str, Any] = attrs.field(factory=dict, converter=as_mapping)
    fusion: Mapping[str, Any] = attrs.field(factory=dict, converter=as_mapping)


class SearchResults(list):  # type: ignore[type-arg]
    """Items a backend's ``search`` returns with a one-line ``note`` for the user (what
    it could not do in time, such as "120 transcripts left to index")."""

    def __init__(self, items: Any = (), note: str | None = None) -> None:
        super().__init__(items)
        self.note = note


@attrs.frozen
class Provenance:
    """Who wrote a memory item and when: a spawned agent's name and session (``remember``)."""

    agent: str
    session_id: str | None
    recorded_at: dt.datetime | None

    def describe(self) -> str:
        """``agent api, session 1a2b3c4d, 2026-11-30``: how briefings and tools show it."""
        session = f", session {self.session_id[:8]}" if self.session_id else ""
        when = f", {self.recorded_at.date().isoformat()}" if self.recorded_at else ""
        return f"agent {self.agent}{session}{when}"


def by_agent(item: MemoryItem) -> bool:
    """Written by an agent (``remember``) and not kept by the user (``pao memory review``): the agents' tier."""
    provenance = item.meta.get("provenance")
    return isinstance(provenance, Mapping) and bool(provenance.get("agent")) and not provenance.get("kept_at")


@attrs.frozen
class Remembered:
    """What ``remember`` stored: the item (with its provenance in ``meta``), or the one
    already there when the observation was known (``created`` false)."""

    item: MemoryItem
    created: bool


@attrs.frozen
class BackendResult:
    """What one backend returned for one query, or why it returned nothing; ``note``:
    what it said besides (:class:`SearchResults`)."""

    backend: str
    status: BackendStatus
    items: tuple[MemoryItem, ...] = ()
    elapsed_ms: float = 0.0
    error: str | None = None
    note: str | None = None

    @property
    def count(self) -> int:
        return len(self.items)


@attrs.frozen
class Briefing:
    """The composed briefing for one topic."""

    topic: str
    markdown: str
    items: tuple[MemoryItem, ...]
    backends: Mapping[str, BackendResult]
    elapsed_ms: float
    folders: tuple[str, ...] = ()
    content_hash: str = ""
    generated_at: dt.datetime | None = None


@attrs.frozen
class Delivery:
    """Where a briefing went (``pao_deliver_briefing``): its file, and the context file that makes the CLI read it."""

    folder: Path
    briefing_path: Path
    context_path: Path
    excluded_in_git: bool


@attrs.frozen
class BriefingContext:
    """What briefing sections render from: the topic, the fused, budgeted items, and the MCP servers (by name)
    wired into the agent's session (none for a briefing no session reads yet, ``pao brief``)."""

    topic: str
    folders: tuple[str, ...]
    items: tuple[MemoryItem, ...]
    backends: Mapping[str, BackendResult]
    servers: tuple[str, ...] = ()


def __getattr__(name: str) -> cattrs.Converter:
    """``converter``: the one for JSON state and config (datetimes as ISO 8601 strings), made on first use."""
    if name != "converter":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from cattrs.preconf.json import make_converter  # here: `pao brief` never needs it, and it costs a process ~8 ms
    conv = globals()[name] = make_converter(forbid_extra_keys=True)
    conv.register_unstructure_hook(dt.datetime, lambda value: value.isoformat())
    conv.register_structure_hook(dt.datetime, lambda value, _: dt.datetime.fromisoformat(value))
    return conv
