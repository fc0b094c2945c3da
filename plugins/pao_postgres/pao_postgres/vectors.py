"""Observation vectors: semantic search of the longterm store, fused with its lexical ranking.

Every write command (``pao memory import``, ``add``) ends with :func:`refresh_vectors`:
observations without a vector of the current :data:`RECIPE`, or whose text changed,
are embedded (all-MiniLM-L6-v2, ``pao_embeddings``) and stored as float32 blobs in
``<observations>_vectors`` beside the observations; vectors of observations that are
gone are dropped. A search reads the vectors once per process into one matrix
(reloaded when the table's generation changes), compares the topic with every row and
keeps those above the method's floor; a store of :data:`pao_postgres.cells.CELLS_FROM`
vectors or more is searched by cells instead (:mod:`pao_postgres.cells`). Nothing here
imports SQLAlchemy or numpy at import time: the search path of the embedded store runs
on the standard library's sqlite3, a server's on psycopg.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import hashlib
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Sequence

import attrs

from pao_embeddings import ahead, model, similar
from pao_embeddings.similar import fuse_by_rank, retrieval_mode
from pao_postgres import cells
from pao_postgres.ranked import quote

if TYPE_CHECKING:
    import sqlalchemy as sa

    from pao_postgres.options import LongtermOptions
    from pao_postgres.retrieval import Method
    from pao_postgres.sqlite_read import Rows
    from pao_postgres.store import LongtermStore

RECIPE = "all-MiniLM-L6-v2 'entity: observation' v1"
"""What a stored vector is of; part of every digest, so a new recipe re-embeds everything."""
EMBED_CHUNK = 256
"""Observations embedded per transaction: an interrupted run keeps what it finished."""
TOPIC_RESERVE = 0.25
"""Seconds kept before the caller's deadline for fusing and answering: a topic vector not
ready by then (the model loads once per process) costs the vectors, not the lexical hits."""


def vector_table(options: LongtermOptions) -> str:
    return f"{options.observations.table}_vectors"


def embedded_text(entity: str, content: str) -> str:
    """What is embedded for an observation: its entity's name gives a short text its subject."""
    return f"{entity}: {content}"


def digest(entity: str, content: str) -> str:
    return hashlib.blake2b(f"{RECIPE}\0{entity}\0{content}".encode(), digest_size=12).hexdigest()


# -- writing ------------------------------------------------------------------------


@attrs.frozen
class RefreshReport:
    embedded: int
    removed: int
    elapsed_s: float
    mode: str


def refresh_vectors(store: LongtermStore, progress: Callable[[int, int], None] | None = None) -> RefreshReport:
    """Bring the vector table in line with the observations (see the module's docstring)."""
    from pao_postgres.engine import WRITE_DEADLINE, transaction  # loads sqlalchemy on use: start-up stays light

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


def names_for(options: LongtermOptions, *, sqlite: bool) -> dict[str, str]:
    """Quoted (and on PostgreSQL schema-qualified) names of the tables and columns used here."""
    o, e, r = options.observations, options.entities, options.relations
    prefix = quote(options.schema) + "." if options.schema and not sqlite else ""
    return {
        "obs": prefix + quote(o.table), "ent": prefix + quote(e.table), "rel": prefix + quote(r.table),
        "vectors": prefix + quote(vector_table(options)),
        "meta": prefix + quote(vector_table(options) + "_meta"), "meta_plain": vector_table(options) + "_meta",
        "cells": prefix + quote(vector_table(options) + "_cells"),
        "o_id": quote(o.id), "o_entity": quote(o.entity_id), "o_content": quote(o.content),
        "e_id": quote(e.id), "e_name": quote(e.name),
    }


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


# -- searching ----------------------------------------------------------------------


SCAN_LIMIT = 200_000
"""Most vectors a process reads into its matrix (300 MB) when the store has no cells (written
before :mod:`pao_postgres.cells`); a larger one searches lexically until its next write
trains them (`pao doctor` says so)."""


def _meta(rows: Rows, names: dict[str, str], sqlite: bool) -> dict[str, str]:
    """The vector table's generation and count; empty for a store without vectors."""
    exists = ("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = :t" if sqlite else
              "SELECT count(*) FROM (SELECT to_regclass(:t) AS oid) r WHERE r.oid IS NOT NULL")
    if not rows(exists, {"t": names["meta_plain"] if sqlite else names["meta"]})[0][0]:
        return {}  # a store written before semantic search, or with it off
    return dict(rows(f"SELECT key, value FROM {names['meta']}", {}))


def vector_meta(rows: Rows, options: LongtermOptions, topic: str, *, sqlite: bool) -> dict[str, str]:
    """The store's vector generation and count (empty: no semantic search here). When the store
    has vectors, the topic's vector starts being made at once on a worker thread, so the model
    loads while the lexical search waits for its server; :func:`nearest` then finds it made (not when
    the helper of a new ``pao brief`` searches the store's file: :func:`nearest_soon` sends it the search)."""
    if not options.semantic or not topic.strip() or not model.available():
        return {}
    meta = _meta(rows, names_for(options, sqlite=sqlite), sqlite)
    if int(meta.get("count", 0)) > 0 and not (sqlite and "cells" not in meta and ahead.running()):
        threading.Thread(target=_embed_early, args=(topic,), name="pao-embed-topic-early", daemon=True).start()
    return meta


def _embed_early(topic: str) -> None:
    with contextlib.suppress(Exception):  # nearest() meets any failure again and handles it
        model.encode_topic(topic)


def nearest(key: str, rows: Rows, options: LongtermOptions, topic: str, method: Method, deadline: float, *,
            sqlite: bool = True, meta: dict[str, str] | None = None) -> list[tuple[int, float]]:
    """``(observation id, cosine)`` of the observations nearest ``topic`` above the method's floors, best first.

    Empty when semantic search is off or not installed, the store has no vectors (or,
    without cells, more than :data:`SCAN_LIMIT`), or the vectors' search is not done
    :data:`TOPIC_RESERVE` seconds before ``deadline`` (:func:`pao_embeddings.similar.nearest`).
    """
    return nearest_soon(key, rows, options, topic, method, deadline, sqlite=sqlite, meta=meta)()


def nearest_soon(key: str, rows: Rows, options: LongtermOptions, topic: str, method: Method, deadline: float, *,
                 sqlite: bool = True, meta: dict[str, str] | None = None) -> Callable[[], list[tuple[int, float]]]:
    """:func:`nearest` in two steps (:func:`pao_embeddings.similar.nearest_soon`): call this before the lexical
    search, what it returns after it (a new ``pao brief``'s helper searches an embedded store's file meanwhile)."""
    if not options.semantic or not topic.strip() or not model.available():
        return list
    names = names_for(options, sqlite=sqlite)
    meta = _meta(rows, names, sqlite) if meta is None else meta
    if "cells" in meta:
        return functools.partial(_without_a_model, cells.nearest_in_cells, key, rows, names, meta["cells"], topic,
                                 method, deadline - TOPIC_RESERVE)
    if "generation" not in meta or not 0 < int(meta.get("count", 0)) <= SCAN_LIMIT:
        return list
    statement = f"SELECT observation_id, vector FROM {names['vectors']} ORDER BY observation_id"
    found = similar.nearest_soon(
        key, meta["generation"], lambda: rows(statement, {}), topic, floor=method.vector_floor,
        limit=method.vector_candidates, standard_floor=method.vector_standard_floor,
        deadline=deadline - TOPIC_RESERVE, sql=statement if sqlite else None,
    )
    return functools.partial(_without_a_model, found)


def _without_a_model(search: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    try:
        return search(*args, **kwargs)
    except model.EmbeddingsUnavailable:
        return []  # a broken model costs the vectors, not the lexical hits (`pao doctor` says why)


def _observations(options: LongtermOptions, rows: Rows, by: str, keys: Sequence[Any], sqlite: bool) -> list[Any]:
    """Observations (in the search's row shape) whose id, or whose entity's name, is in ``keys``."""
    o, e, names = options.observations, options.entities, names_for(options, sqlite=sqlite)
    column = f"o.{quote(o.id)}" if by == "id" else f"e.{quote(e.name)}"
    marks = ", ".join(f":k{n}" for n in range(len(keys)))
    return rows(
        f"SELECT e.{quote(e.name)} AS name, e.{quote(e.entity_type)} AS entity_type, o.{quote(o.content)} AS content, "
        f"o.{quote(o.position)} AS position, o.{quote(o.created_at)} AS created_at, o.{quote(o.id)} AS id, 0.0 AS score "
        f"FROM {names['obs']} o JOIN {names['ent']} e ON e.{quote(e.id)} = o.{quote(o.entity_id)} "
        f"WHERE {column} IN ({marks}) ORDER BY o.{quote(o.position)}",
        {f"k{n}": key for n, key in enumerate(keys)},
    )


def with_vector_hits(options: LongtermOptions, rows: Rows, lexical: Sequence[Any], near: Sequence[tuple[int, float]],
                     k: int, *, sqlite: bool = True) -> list[Any]:
    """The lexical rows and the vector hits fused by rank, each row scored by its fused score."""
    fused = fuse_by_rank([[(row.id, row.score) for row in lexical], near], k)
    found = {row.id: row for row in lexical}
    wanted = [key for key, _ in fused if key not in found]
    if wanted:
        found.update({row.id: row for row in _observations(options, rows, "id", wanted, sqlite)})
    # a vector of an observation removed since the last refresh has no row: it is skipped
    return [found[key]._replace(score=score) for key, score in fused if key in found]


def with_entity_siblings(options: LongtermOptions, rows: Rows, kept: Sequence[Any], limit: int, which: str,
                         found_by_both: set[int], *, related: bool = False, sqlite: bool = True) -> list[Any]:
    """``kept``, then the other observations of its entities (best entity first, in their order),
    each scored below every hit: found through their entity, not through the topic.

    ``which``: ``all`` hits' entities, or ``confirmed`` ones only: with two hits, or with a
    hit that both rankings found (ids in ``found_by_both``). ``related``: after those, the
    observations of the entities they have a relation with, in either direction (a project's
    parts, the tool a part uses): the graph's own say on what belongs to one subject.
    """
    if not kept or len(kept) >= limit:
        return list(kept)
    hits = collections.Counter(row.name for row in kept)
    entities = [name for name in hits if which == "all" or hits[name] >= 2
                or any(row.name == name and row.id in found_by_both for row in kept)]
    if not entities:
        return list(kept)
    if related:
        entities += [name for name in _related(options, rows, entities, sqlite) if name not in entities]
    fetched = _observations(options, rows, "name", entities, sqlite)
    have = {row.id for row in kept}
    lowest = min(float(row.score) for row in kept)
    rank = {name: n for n, name in enumerate(entities)}
    extra = sorted((row for row in fetched if row.id not in have), key=lambda row: (rank[row.name], row.position))
    return [*kept, *(row._replace(score=lowest * (1 - (n + 1) / (len(extra) + 1))) for n, row in enumerate(extra))][:limit]


def _related(options: LongtermOptions, rows: Rows, names: Sequence[str], sqlite: bool) -> list[str]:
    """The entities with a relation to one of ``names`` (either direction), in the order of ``names``."""
    e, r, n = options.entities, options.relations, names_for(options, sqlite=sqlite)
    marks = ", ".join(f":k{i}" for i in range(len(names)))
    ends = (quote(r.from_entity_id), quote(r.to_entity_id))
    found = rows(" UNION ".join(
        f"SELECT a.{quote(e.name)} AS name, b.{quote(e.name)} AS other FROM {n['rel']} r "
        f"JOIN {n['ent']} a ON a.{quote(e.id)} = r.{near} JOIN {n['ent']} b ON b.{quote(e.id)} = r.{far} "
        f"WHERE a.{quote(e.name)} IN ({marks})" for near, far in (ends, ends[::-1])
    ), {f"k{i}": name for i, name in enumerate(names)})
    order = {name: i for i, name in enumerate(names)}
    return list(dict.fromkeys(row[1] for row in sorted(found, key=lambda row: (order[row[0]], row[1]))))


def retrieval_status(store: LongtermStore, observations: int, deadline: float) -> str:
    """Which retrieval runs on this store and why (``pao memory stats``, ``pao doctor``)."""
    vectors, meta = 0, {}
    if store.exists():
        import sqlalchemy as sa  # loads sqlalchemy on use: start-up stays light

        from pao_postgres.engine import transaction  # loads sqlalchemy on use: start-up stays light

        names = _names(store)
        with transaction(store.engine(), deadline) as connection:
            def run(sql: str, params: dict[str, Any]) -> list[Any]:
                return list(connection.execute(sa.text(sql), params))

            meta = _meta(run, names, store.is_sqlite)
            vectors = int(meta.get("count", 0))
    if vectors > SCAN_LIMIT and "cells" not in meta:
        return f"lexical only: {vectors:,} vectors, more than the {SCAN_LIMIT:,} a search compares without cells " \
               "(run 'pao memory import' again)"
    mode = retrieval_mode(enabled=store.options.semantic, vectors=vectors, items=observations, what="observations",
                          refresh="run 'pao memory sync' or 'pao memory import' again")
    if "cells" in meta and mode.startswith("semantic"):
        mode += f"; {cells.cell_count(int(meta['cells_trained'])):,} cells, {cells.PROBES} read per search"
    return mode
