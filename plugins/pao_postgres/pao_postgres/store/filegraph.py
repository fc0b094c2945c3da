"""The memory file's graph as pao keeps it, and the sync table: what the whole-file sync
(:mod:`pao_postgres.store.filesync`) and the sync in parts (:mod:`pao_postgres.store.filebatches`) share."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

import attrs

from pao_postgres.errors import LongtermError
from pao_postgres.mcpfile import EntityLine, MemoryFile, RelationLine
from pao_postgres.searcher.ranked import quote
from pao_postgres.searcher.reading import reading

if TYPE_CHECKING:
    import sqlalchemy as sa

    from pao_postgres.options import LongtermOptions
    from pao_postgres.store.longterm import LongtermStore

SYNC_TABLE = "pao_memory_file_sync"


class TornRead(Exception):
    """The file was caught half-written (one-line reason)."""


@attrs.frozen
class SyncReport:
    """What one sync did (``note``: why it did nothing, when it could not)."""

    file: str
    synced: bool = False
    added: Mapping[str, int] = attrs.field(factory=dict)
    removed: Mapping[str, int] = attrs.field(factory=dict)
    note: str | None = None
    complete: bool = False
    """A sync in parts: every part is in, the whole graph is still to replace the previous one."""


def signature(stat: os.stat_result) -> str:
    return f"{stat.st_ino}:{stat.st_size}:{stat.st_mtime_ns}"


def as_json(memory: MemoryFile) -> str:
    return json.dumps(
        {"entities": [[e.name, e.entity_type, list(e.observations)] for e in memory.entities],
         "relations": [[r.source, r.target, r.relation_type] for r in memory.relations]},
        ensure_ascii=False, sort_keys=True,
    )


def from_json(text: str | None) -> MemoryFile:
    if not text:
        return MemoryFile((), ())
    data = json.loads(text)
    return MemoryFile(
        tuple(EntityLine(name, kind, tuple(obs)) for name, kind, obs in data["entities"]),
        tuple(RelationLine(*edge) for edge in data["relations"]),
    )


def observation_pairs(memory: MemoryFile) -> set[tuple[str, str]]:
    return {(e.name, text) for e in memory.entities for text in e.observations}


def added_part(old: MemoryFile, new: MemoryFile) -> MemoryFile:
    """What ``new`` has that ``old`` had not, as a graph :meth:`LongtermStore.import_into` takes."""
    had = observation_pairs(old)
    known = {e.name: e.entity_type for e in old.entities}
    entities = tuple(
        attrs.evolve(e, observations=tuple(o for o in e.observations if (e.name, o) not in had))
        for e in new.entities
    )
    entities = tuple(e for e in entities if e.observations or e.name not in known)
    had_relations = set(old.relations)
    return MemoryFile(entities, tuple(r for r in new.relations if r not in had_relations))


# -- the sync table and the apply step ------------------------------------------------------


def sync_table(options: LongtermOptions) -> sa.Table:
    import sqlalchemy as sa  # loads sqlalchemy on use: start-up stays light

    metadata = sa.MetaData(schema=options.schema or None)
    return sa.Table(
        SYNC_TABLE, metadata,
        sa.Column("source", sa.Text, primary_key=True),
        sa.Column("signature", sa.Text, nullable=False),
        sa.Column("digest", sa.Text, nullable=False),
        sa.Column("graph", sa.Text, nullable=False),
        sa.Column("synced_at", sa.DateTime(timezone=True), nullable=False),
    )


def read_rows(options: LongtermOptions, home: Path, name: str, query: str, params: Mapping[str, object],
              deadline: float) -> list[tuple] | None:
    """Rows of ``query`` on pao's table ``name`` (``{table}`` in the query); None when there is no
    store or no such table yet. The embedded store is read with the standard library: this runs
    before every search."""
    table = quote(name)
    server = bool(options.url.strip())
    if not server and not options.sqlite_file(home).exists():
        return None
    qualified = f"{quote(options.schema)}.{table}" if options.schema and server else table
    try:
        with reading(options, home, deadline) as rows:
            return list(rows(query.format(table=qualified), dict(params)))
    except LongtermError as exc:
        if "a table is missing" not in str(exc):
            raise
        return None


def lock_sync(store: LongtermStore, connection: sa.Connection) -> None:
    """One syncing transaction at a time (SQLite: its write lock), schema included."""
    import sqlalchemy as sa  # loads sqlalchemy on use: start-up stays light

    if not store.is_sqlite:
        connection.execute(sa.select(sa.func.pg_advisory_xact_lock(sa.func.hashtext(SYNC_TABLE))))
