"""Provenance of observations that agents ``remember``-ed: written with them, shown with them.

Searches find observations by their text alone (every mode, both dialects); the
provenance of the few items found is then read in one more query and put in each
item's ``meta["provenance"]``, which the briefing and ``search_memory`` show.
Standard library only for the embedded store (the spawn path imports no SQLAlchemy).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import attrs

from pao_core.models import MemoryItem, Provenance
from pao_postgres.items import as_utc
from pao_postgres.options import LongtermOptions
from pao_postgres.sqlite_read import reading

if TYPE_CHECKING:
    from pao_postgres.store import LongtermStore


def same_observation(text: str) -> str:
    """What makes two observations the same one: their words, case and spacing aside."""
    return " ".join(text.split()).casefold()


def with_provenance(item: MemoryItem, source: Provenance | Any | None) -> MemoryItem:
    """``item`` with ``meta["provenance"]`` from a :class:`Provenance` or a provenance row."""
    if source is None:
        return item
    recorded = as_utc(source.recorded_at)
    provenance = {
        "agent": source.agent,
        "session_id": source.session_id,
        "recorded_at": recorded.isoformat() if recorded else None,
    }
    return attrs.evolve(item, meta={**item.meta, "provenance": provenance})


def _key(item: MemoryItem) -> tuple[str, int]:
    return item.meta["entity"], int(item.meta["position"])


def _attach(items: Sequence[MemoryItem], rows: Sequence[Any]) -> list[MemoryItem]:
    found = {(row.entity, int(row.position)): row for row in rows}
    return [with_provenance(item, found.get(_key(item))) for item in items]


def _quoted(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def attach_embedded(options: LongtermOptions, path: Path, items: Sequence[MemoryItem], deadline: float) -> list[MemoryItem]:
    """The embedded store's items with their provenance (``sqlite3``, no SQLAlchemy)."""
    if not items or not path.exists():
        return list(items)
    ent, obs = options.entities, options.observations
    names = sorted({item.meta["entity"] for item in items})
    statement = (
        f"SELECT e.{_quoted(ent.name)} AS entity, o.{_quoted(obs.position)} AS position, "
        "p.agent AS agent, p.session_id AS session_id, p.recorded_at AS recorded_at "
        f"FROM {_quoted(options.provenance_table)} p "
        f"JOIN {_quoted(obs.table)} o ON o.{_quoted(obs.id)} = p.observation_id "
        f"JOIN {_quoted(ent.table)} e ON e.{_quoted(ent.id)} = o.{_quoted(obs.entity_id)} "
        f"WHERE e.{_quoted(ent.name)} IN ({', '.join(f':n{i}' for i in range(len(names)))})"
    )
    with reading(path, deadline) as rows:
        exists = rows("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :name", {"name": options.provenance_table})
        found = rows(statement, {f"n{i}": name for i, name in enumerate(names)}) if exists else []
    return _attach(items, found)


def attach_server(store: LongtermStore, items: Sequence[MemoryItem], deadline: float) -> list[MemoryItem]:
    """A PostgreSQL store's items with their provenance (none before the table exists)."""
    import sqlalchemy as sa  # loads sqlalchemy on use: start-up stays light

    from pao_postgres.engine import transaction  # loads sqlalchemy on use: start-up stays light

    if not items:
        return list(items)
    t = store.tables
    names = sorted({item.meta["entity"] for item in items})
    query = (
        sa.select(
            t.entities.c.name.label("entity"),
            t.observations.c.position.label("position"),
            t.provenance.c.agent,
            t.provenance.c.session_id,
            t.provenance.c.recorded_at,
        )
        .join(t.observations, t.observations.c.id == t.provenance.c.observation_id)
        .join(t.entities, t.entities.c.id == t.observations.c.entity_id)
        .where(t.entities.c.name.in_(names))
    )
    with transaction(store.engine(), deadline) as connection:
        exists = connection.exec_driver_sql(
            "SELECT to_regclass(%(name)s)", {"name": f"{_quoted(store.options.schema)}.{_quoted(t.provenance.name)}"
                                             if store.options.schema else _quoted(t.provenance.name)}
        ).scalar()
        found = connection.execute(query).all() if exists else []
    return _attach(items, found)
