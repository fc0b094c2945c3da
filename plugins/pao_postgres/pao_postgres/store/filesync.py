"""The live bridge to the MCP memory server's file: the store follows the file before a search.

The MCP reference memory server keeps its graph in one JSONL file
(``MEMORY_FILE_PATH``) and rewrites the whole file on every change. pao keeps, per
file, what it last synced from it (the file's graph, its digest and its stat
signature) in a table of the store, ``pao_memory_file_sync``. Before a search:

1. **check** (every search): ``stat`` the file and compare its signature (inode,
   size, mtime) with the stored one: one small read, well under a millisecond once
   connected. Unchanged: nothing else happens.
2. **read** (the file changed): the whole file, only when it is settled: a file
   modified in the last :data:`SETTLE_S` is waited for, a file whose signature changes
   during the read or that does not parse (a half-written last line) is a torn read,
   and so is an empty file younger than :data:`EMPTY_GRACE_S` (the server truncates,
   then writes). A torn read changes nothing: the store keeps its previous state and
   the search says so.
3. **apply** (one write transaction, serialised between processes by SQLite's write
   lock or a PostgreSQL advisory lock, re-checked inside): the difference between the
   file's previous graph and its new one. What the file dropped is removed, what it
   gained is added (an observation already in the store is not added twice), changed
   entity types are updated. Only what came from the file is ever removed: what pao
   wrote itself (``pao memory add``, an agent's ``remember``) is not in the file's
   previous graph, so a sync never deletes it; an observation with provenance (an
   agent remembered it) is kept even when the file had the same text and dropped it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from pao_core.errors import PaoError
from pao_core.files import open_no_follow
from pao_postgres.store import filebatches
from pao_postgres.errors import LongtermError
from pao_postgres.store.filebatches import WHOLE_FILE_BYTES, abandoned_graphs, sync_in_parts
from pao_postgres.store.filegraph import (SYNC_TABLE, SyncReport, TornRead, added_part, as_json, from_json, lock_sync,
                                    observation_pairs, read_rows, signature, sync_table)
from pao_postgres.mcpfile import ImportFileError, MemoryFile, merge, parse_memory

if TYPE_CHECKING:
    import sqlalchemy as sa

    from pao_postgres.options import LongtermOptions
    from pao_postgres.store.longterm import LongtermStore

SETTLE_S = 0.05
"""A file modified this recently may still be being written: wait until it is this old."""
SETTLE_TRIES = 5
EMPTY_GRACE_S = 2.0
"""An empty file this young is a rewrite caught between truncation and write."""


def read_settled(path: Path) -> tuple[str, MemoryFile]:
    """The file's signature and graph, read whole and unchanged, or :class:`TornRead`."""
    try:
        before = os.stat(path)
        for _ in range(SETTLE_TRIES):  # a writer that is still at it gets a moment more
            age = time.time() - before.st_mtime
            if age >= SETTLE_S:
                break
            time.sleep(SETTLE_S - max(0.0, age))
            before = os.stat(path)
        with os.fdopen(open_no_follow(path, os.O_RDONLY, follow=True, owned=False), "rb") as handle:
            data = handle.read()  # a regular file only: a FIFO would never end
            during = os.fstat(handle.fileno())
        after = os.stat(path)
    except FileNotFoundError:
        raise TornRead(f"{path}: not there (being replaced?)") from None
    except PaoError as exc:
        raise TornRead(str(exc)) from None
    except OSError as exc:
        raise TornRead(f"{path}: cannot read: {exc.strerror}") from None
    if not signature(before) == signature(during) == signature(after) or len(data) != after.st_size:
        raise TornRead(f"{path}: changed while it was read")
    if not data.strip() and time.time() - after.st_mtime < EMPTY_GRACE_S:
        raise TornRead(f"{path}: empty and just written (a rewrite in progress)")
    try:
        return signature(after), parse_memory(data, str(path), cut=True)
    except ImportFileError as exc:
        raise TornRead(f"half-written or invalid: {exc}") from None


# -- the graph as sets, and its difference ---------------------------------------------


def stored_signature(options: LongtermOptions, home: Path, source: str, deadline: float) -> str | None:
    """The signature last synced from ``source`` (None: never, or no store yet)."""
    found = read_rows(options, home, SYNC_TABLE, "SELECT signature FROM {table} WHERE source = :source",
                      {"source": source}, deadline)
    return found[0][0] if found else None


def sync(options: LongtermOptions, home: Path, path: Path, deadline: float | None = None) -> SyncReport:
    """Bring the store up to date with the MCP memory file ``path`` (see the module);
    ``deadline`` bounds the whole sync (None: the CLI's write deadline)."""
    from pao_postgres.store.engine import WRITE_DEADLINE  # loads sqlalchemy on use: start-up stays light

    deadline = deadline or time.monotonic() + WRITE_DEADLINE
    source = str(path.resolve()) if path.exists() else str(path)
    try:
        current = signature(os.stat(path))
    except OSError as exc:
        return SyncReport(source, note=f"memory file {path}: {exc.strerror}; searched the store as it was")
    if stored_signature(options, home, source, deadline) == current:
        return SyncReport(source)
    from pao_postgres.store.longterm import LongtermStore  # loads sqlalchemy on use: start-up stays light

    if int(current.split(":")[1]) > WHOLE_FILE_BYTES:  # a large file: in parts, each within the deadline
        parts = sync_in_parts(LongtermStore(options, home), path, source, current, deadline)
        if not parts.complete:
            return parts
        try:
            return complete(LongtermStore(options, home), source, current, deadline, parts)
        except LongtermError as exc:  # every part stays in: the next search completes it
            return attrs.evolve(parts, complete=False, note=(
                f"memory file {path}: every line synced, the sync not completed ({exc}); the next search "
                "completes it ('pao memory sync' does it now)"))
    try:
        current, memory = read_settled(path)
    except TornRead as exc:
        return SyncReport(source, note=f"memory file not synced ({exc}); searched the store as it was")
    return apply(LongtermStore(options, home), source, current, memory, deadline)


def complete(store: LongtermStore, source: str, current: str, deadline: float, parts: SyncReport) -> SyncReport:
    """Every part is in: the file's whole graph replaces the previous one (what it dropped removed)."""
    import sqlalchemy as sa  # loads sqlalchemy on use: start-up stays light

    table = filebatches.pending_table(store.options)
    with store.write(deadline) as connection:
        graphs = connection.execute(sa.select(table.c.graph).where(
            table.c.source == source, table.c.signature == current).order_by(table.c.seq)).scalars()
        whole = merge(from_json(graph) for graph in graphs)
    report = apply(store, source, current, whole, deadline, imported=True)
    return attrs.evolve(report, added=parts.added or report.added)


def apply(store: LongtermStore, source: str, current: str, memory: MemoryFile, deadline: float,
          *, imported: bool = False) -> SyncReport:
    """Apply the file's change in one write transaction (re-checked under its lock). What a sync in
    parts added counts as the file's previous content; ``imported``: those parts added all of ``memory``."""
    import sqlalchemy as sa  # loads sqlalchemy on use: start-up stays light

    from pao_postgres.store.schema import create_schema  # loads sqlalchemy on use: start-up stays light

    table = sync_table(store.options)
    graph = as_json(memory)
    digest = hashlib.sha256(graph.encode("utf-8")).hexdigest()
    with store.write(deadline) as connection:
        lock_sync(store, connection)
        row = None
        if sa.inspect(connection).has_table(SYNC_TABLE, schema=table.schema):
            row = connection.execute(sa.select(table.c.signature, table.c.digest, table.c.graph).where(table.c.source == source)).first()
        if row is None:  # a first sync: the schema may be missing (a synced store has it)
            create_schema(connection, store.tables)
            table.create(connection, checkfirst=True)
        if row is not None and row.signature == current:
            return SyncReport(source)  # another process synced this version meanwhile
        added: dict[str, int] = {}
        removed: dict[str, int] = {}
        parts = abandoned_graphs(connection, store.options, source)
        if row is None or row.digest != digest or parts:
            old = merge([from_json(row.graph if row is not None else None), *map(from_json, parts)])
            removed = _remove(store, connection, old, memory)
            if not imported:
                added = attrs.asdict(store.import_into(connection, added_part(old, memory)))
            _retype(store, connection, old, memory)
        values = {"signature": current, "digest": digest, "graph": graph, "synced_at": dt.datetime.now(dt.timezone.utc)}
        if row is None:
            connection.execute(sa.insert(table), {"source": source, **values})
        else:
            connection.execute(sa.update(table).where(table.c.source == source), values)
    return SyncReport(source, synced=True, added=added, removed=removed)


def _remove(store: LongtermStore, connection: sa.Connection, old: MemoryFile, new: MemoryFile) -> dict[str, int]:
    """Delete what the file had and no longer has; an entity only when nothing is left of it."""
    import sqlalchemy as sa  # loads sqlalchemy on use: start-up stays light

    t = store.tables
    gone_observations = observation_pairs(old) - observation_pairs(new)
    gone_relations = set(old.relations) - set(new.relations)
    gone_entities = {e.name for e in old.entities} - {e.name for e in new.entities}
    names = {name for name, _ in gone_observations} | gone_entities
    names |= {name for r in gone_relations for name in (r.source, r.target)}
    from pao_postgres.store.longterm import chunks  # loads sqlalchemy on use: start-up stays light

    ids: dict[str, int] = {}
    for chunk in chunks(sorted(names)):
        query = sa.select(t.entities.c.name, t.entities.c.id).where(t.entities.c.name.in_(chunk))
        ids.update({name: entity_id for name, entity_id in connection.execute(query)})
    counts = {"entities": 0, "observations": 0, "relations": 0}
    obs, rel = t.observations.c, t.relations.c
    remembered = sa.select(t.provenance.c.observation_id)  # an agent's remember: pao's own, never the file's
    for name, text in sorted(gone_observations):
        if name in ids:
            done = connection.execute(sa.delete(t.observations).where(
                obs.entity_id == ids[name], obs.content == text, obs.id.not_in(remembered)
            ))
            counts["observations"] += done.rowcount
    for edge in sorted(gone_relations):
        if edge.source in ids and edge.target in ids:
            done = connection.execute(sa.delete(t.relations).where(
                rel.from_entity_id == ids[edge.source], rel.to_entity_id == ids[edge.target],
                rel.relation_type == edge.relation_type,
            ))
            counts["relations"] += done.rowcount
    for name in sorted(gone_entities):
        if name not in ids:
            continue
        entity_id = ids[name]
        used = connection.execute(sa.select(
            sa.exists().where(obs.entity_id == entity_id)
            | sa.exists().where(sa.or_(rel.from_entity_id == entity_id, rel.to_entity_id == entity_id))
        )).scalar()
        if not used:  # what pao wrote itself keeps its entity
            connection.execute(sa.delete(t.entities).where(t.entities.c.id == entity_id))
            counts["entities"] += 1
    return counts


def _retype(store: LongtermStore, connection: sa.Connection, old: MemoryFile, new: MemoryFile) -> None:
    import sqlalchemy as sa  # loads sqlalchemy on use: start-up stays light

    before = {e.name: e.entity_type for e in old.entities}
    entities = store.tables.entities
    for entity in new.entities:
        if entity.name in before and before[entity.name] != entity.entity_type:
            connection.execute(
                sa.update(entities).where(entities.c.name == entity.name).values(entity_type=entity.entity_type)
            )


