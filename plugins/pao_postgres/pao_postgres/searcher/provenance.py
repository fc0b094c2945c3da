"""Provenance of observations that agents ``remember``-ed: written with them, shown with them.

Searches find observations by their text alone (every mode, both dialects); the
provenance of the few items found is then read in one more query and put in each
item's ``meta["provenance"]``, which the briefing and ``search_memory`` show.
No SQLAlchemy: ``sqlite3`` for the embedded store, psycopg for a server (the spawn path).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import attrs

from pao_core.models import MemoryItem, Provenance
from pao_postgres.items import as_utc
from pao_postgres.options import LongtermOptions
from pao_postgres.searcher.reading import reading


def same_observation(text: str) -> str:
    """What makes two observations the same one: their words, case and spacing aside."""
    return " ".join(text.split()).casefold()


def with_provenance(item: MemoryItem, source: Provenance | Any | None) -> MemoryItem:
    """``item`` with ``meta["provenance"]`` from a :class:`Provenance` or a provenance row."""
    if source is None:
        return item
    recorded, kept = as_utc(source.recorded_at), as_utc(getattr(source, "kept_at", None))
    provenance = {
        "agent": source.agent,
        "session_id": source.session_id,
        "recorded_at": recorded.isoformat() if recorded else None,
        "kept_at": kept.isoformat() if kept else None,
    }
    return attrs.evolve(item, meta={**item.meta, "provenance": provenance})


def _key(item: MemoryItem) -> tuple[str, int]:
    return item.meta["entity"], int(item.meta["position"])


def _attach(items: Sequence[MemoryItem], rows: Sequence[Any]) -> list[MemoryItem]:
    found = {(row.entity, int(row.position)): row for row in rows}
    return [with_provenance(item, found.get(_key(item))) for item in items]


def _quoted(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def attach(options: LongtermOptions, home: Path, items: Sequence[MemoryItem], deadline: float) -> list[MemoryItem]:
    """The items found with their provenance (none before pao's table exists), read in one
    more short transaction: ``sqlite3`` for the embedded store, psycopg for a server (no SQLAlchemy)."""
    sqlite = not options.url.strip()
    if not items or (sqlite and not options.sqlite_file(home).exists()):
        return list(items)
    ent, obs = options.entities, options.observations
    prefix = _quoted(options.schema) + "." if options.schema and not sqlite else ""
    table = prefix + _quoted(options.provenance_table)
    names = sorted({item.meta["entity"] for item in items})
    statement = (
        f"SELECT e.{_quoted(ent.name)} AS entity, o.{_quoted(obs.position)} AS position, "
        "p.agent AS agent, p.session_id AS session_id, p.recorded_at AS recorded_at, {kept} AS kept_at "
        f"FROM {table} p "
        f"JOIN {prefix}{_quoted(obs.table)} o ON o.{_quoted(obs.id)} = p.observation_id "
        f"JOIN {prefix}{_quoted(ent.table)} e ON e.{_quoted(ent.id)} = o.{_quoted(obs.entity_id)} "
        f"WHERE e.{_quoted(ent.name)} IN ({', '.join(f':n{i}' for i in range(len(names)))})"
    )
    # A store made before the kept_at column (migrated on its next write) reads as nothing kept.
    exists = ("SELECT (SELECT count(*) FROM pragma_table_info(:name) WHERE name = 'kept_at') AS kept "
              "FROM sqlite_master WHERE type = 'table' AND name = :name" if sqlite
              else "SELECT (SELECT count(*) FROM pg_attribute WHERE attrelid = to_regclass(:name) "
                   "AND attname = 'kept_at' AND NOT attisdropped) AS kept WHERE to_regclass(:name) IS NOT NULL")
    with reading(options, home, deadline) as rows:
        found = rows(exists, {"name": options.provenance_table if sqlite else table})
        kept = "p.kept_at" if found and found[0].kept else "NULL"
        found = rows(statement.replace("{kept}", kept), {f"n{i}": name for i, name in enumerate(names)}) if found else []
    return _attach(items, found)
