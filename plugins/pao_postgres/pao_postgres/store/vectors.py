"""Observation vectors, written: every write command (``pao memory import``, ``add``) ends with
:func:`refresh_vectors`: observations without a vector of the current :data:`RECIPE`, or whose
text changed, are embedded (all-MiniLM-L6-v2, ``pao_embeddings``) and stored as float32 blobs in
``<observations>_vectors`` beside the observations; vectors of observations that are gone are
dropped; a store of :data:`pao_postgres.store.cells.CELLS_FROM` vectors or more is grouped into
cells (:mod:`pao_postgres.store.cells`). How a search reads them: :mod:`pao_postgres.searcher.vectors`.
"""

from __future__ import annotations

import hashlib
import time
from typing import TYPE_CHECKING, Any, Callable, Sequence

import attrs

from pao_embeddings import model
from pao_embeddings.similar import retrieval_mode
from pao_postgres.searcher import cells as search_cells
from pao_postgres.searcher.vectors import SCAN_LIMIT, meta_of, names_for
from pao_postgres.store import cells

if TYPE_CHECKING:
    import sqlalchemy as sa

    from pao_postgres.store.longterm import LongtermStore

RECIPE = "all-MiniLM-L6-v2 'entity: observation' v1"
"""What a stored vector is of; part of every digest, so a new recipe re-embeds everything."""
EMBED_CHUNK = 256
"""Observations embedded per transaction: an interrupted run keeps what it finished."""


def embedded_text(entity: str, content: str) -> str:
    """What is embedded for an observation: its entity's name gives a short text its subject."""
    return f"{entity}: {content}"


def digest(entity: str, content: str) -> str:
    return hashlib.blake2b(f"{RECIPE}\0{entity}\0{content}".encode(), digest_size=12).hexdigest()


@attrs.frozen
class RefreshReport:
    embedded: int
    removed: int
    elapsed_s: float
    mode: str


def refresh_vectors(store: LongtermStore, progress: Callable[[int, int], None] | None = None) -> RefreshReport:
    """Bring the vector table in line with the observations (see the module's docstring)."""
    from pao_postgres.store.engine import WRITE_DEADLINE, transaction  # loads sqlalchemy on use: start-up stays light

    started = time.monotonic()
    if not store.options.semantic or not model.available() or not store.exists():
        return RefreshReport(0, 0, 0.0, "lexical only")
    names = _names(store)
    with transaction(store.engine(), time.monotonic() + WRITE_DEADLINE, write=True) as connection:
        _create_table(connection, store, names)
        meta = dict(connection.exec_driver_sql(f"SELECT key, value FROM {names['meta']}").fetchall())
        centroids = cells.stored_centroids(connection, names, meta)
        stored = dict(connection.exec_driver_sql(f"SELECT observation_id, digest FROM {names['vectors']}").fetchall())
        current = connection.exec_driver_sql(
            f"SELECT o.{names['o_id']}, e.{names['e_name']}, o.{names['o_content']} FROM {names['obs']} o "
            f"JOIN {names['ent']} e ON e.{names['e_id']} = o.{names['o_entity']}"
        ).fetchall()
        gone = set(stored) - {row[0] for row in current}
        if gone:
            connection.exec_driver_sql(
                f"DELETE FROM {names['vectors']} WHERE observation_id NOT IN (SELECT {names['o_id']} FROM {names['obs']})"
            )
    wanted = [(oid, entity, content) for oid, entity, content in current if stored.get(oid) != digest(entity, content)]
    wanted.sort(key=lambda row: len(row[1]) + len(row[2]))  # each chunk's batches of like lengths: little padding
    if wanted:
        encoder = model.shared_encoder()
        for start in range(0, len(wanted), EMBED_CHUNK):
            chunk = wanted[start : start + EMBED_CHUNK]
            matrix = encoder.encode([embedded_text(entity, content) for _, entity, content in chunk], batch_size=16)
            with transaction(store.engine(), time.monotonic() + WRITE_DEADLINE, write=True) as connection:
                _upsert(connection, names, [(oid, digest(entity, content), vector.tobytes())
                                            for (oid, entity, content), vector in zip(chunk, matrix)])
                if centroids is not None:
                    cells.append(connection, names, centroids, [oid for oid, _, _ in chunk], matrix, store.is_sqlite)
            if progress:
                progress(min(start + EMBED_CHUNK, len(wanted)), len(wanted))
    with transaction(store.engine(), time.monotonic() + WRITE_DEADLINE, write=True) as connection:
        _one_at_a_time(connection, store, names)  # the count, the cells and the meta of one refresh at a time
        count = connection.exec_driver_sql(f"SELECT count(*) FROM {names['vectors']}").scalar() or 0
        changes = {"generation": str(time.time_ns()), "count": str(count)} if wanted or gone else {}
        trained = cells.retrain(connection, names, count, store.is_sqlite) if cells.due(meta, count) else None
        dropped = ["cells", "cells_trained"] if trained == {} else []  # back under cells.CELLS_FROM
        _set_meta(connection, names, changes | (trained or {}), dropped)
    return RefreshReport(len(wanted), len(gone), round(time.monotonic() - started, 3), "semantic + lexical")


def _set_meta(connection: sa.Connection, names: dict[str, str], changes: dict[str, str], dropped: Sequence[str]) -> None:
    import sqlalchemy as sa  # loads sqlalchemy on use: start-up stays light

    for key in [*changes, *dropped]:
        connection.execute(sa.text(f"DELETE FROM {names['meta']} WHERE key = :key"), {"key": key})
    for key, value in changes.items():
        connection.execute(sa.text(f"INSERT INTO {names['meta']} (key, value) VALUES (:key, :value)"),
                           {"key": key, "value": value})


def _names(store: LongtermStore) -> dict[str, str]:
    return names_for(store.options, sqlite=store.is_sqlite)


def _create_table(connection: sa.Connection, store: LongtermStore, names: dict[str, str]) -> None:
    blob = "BLOB" if store.is_sqlite else "bytea"
    _one_at_a_time(connection, store, names)  # concurrent CREATE TABLE IF NOT EXISTS collide in PostgreSQL's catalog
    connection.exec_driver_sql(
        f"CREATE TABLE IF NOT EXISTS {names['vectors']} (observation_id INTEGER PRIMARY KEY, digest TEXT NOT NULL, "
        f"vector {blob} NOT NULL)"
    )
    connection.exec_driver_sql(f"CREATE TABLE IF NOT EXISTS {names['meta']} (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    cells.create(connection, names, store.is_sqlite)


def _one_at_a_time(connection: sa.Connection, store: LongtermStore, names: dict[str, str]) -> None:
    """PostgreSQL: this transaction waits for another refresh's (SQLite's write transactions take turns already)."""
    if not store.is_sqlite:
        connection.exec_driver_sql("SELECT pg_advisory_xact_lock(hashtext(%s))", (names["vectors"],))


def _upsert(connection: sa.Connection, names: dict[str, str], rows: Sequence[tuple[int, str, bytes]]) -> None:
    mark = "?" if connection.dialect.name == "sqlite" else "%s"
    connection.exec_driver_sql(
        f"INSERT INTO {names['vectors']} (observation_id, digest, vector) VALUES ({mark}, {mark}, {mark}) "
        "ON CONFLICT (observation_id) DO UPDATE SET digest = excluded.digest, vector = excluded.vector",
        list(rows),
    )


def retrieval_status(store: LongtermStore, observations: int, deadline: float) -> str:
    """Which retrieval runs on this store and why (``pao memory stats``, ``pao doctor``)."""
    vectors, meta = 0, {}
    if store.exists():
        import sqlalchemy as sa  # loads sqlalchemy on use: start-up stays light

        from pao_postgres.store.engine import transaction  # loads sqlalchemy on use: start-up stays light

        names = _names(store)
        with transaction(store.engine(), deadline) as connection:
            def run(sql: str, params: dict[str, Any]) -> list[Any]:
                return list(connection.execute(sa.text(sql), params))

            meta = meta_of(run, names, store.is_sqlite)
            vectors = int(meta.get("count", 0))
    if vectors > SCAN_LIMIT and "cells" not in meta:
        return f"lexical only: {vectors:,} vectors, more than the {SCAN_LIMIT:,} a search compares without cells " \
               "(run 'pao memory embed')"
    mode = retrieval_mode(enabled=store.options.semantic, vectors=vectors, items=observations, what="observations",
                          refresh="run 'pao memory embed'")
    if "cells" in meta and mode.startswith("semantic"):
        mode += f"; {search_cells.cell_count(int(meta['cells_trained'])):,} cells, {search_cells.PROBES} read per search"
    return mode
