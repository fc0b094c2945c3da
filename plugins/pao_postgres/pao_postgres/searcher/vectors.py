"""Observation vectors in a search: the nearest ones to a topic, fused with the lexical ranking.

The vectors are written by :mod:`pao_postgres.store.vectors` (``<observations>_vectors``
beside the observations). A search reads them once per process into one matrix
(reloaded when the table's generation changes), compares the topic with every row and
keeps those above the method's floor; a store of :data:`pao_postgres.store.cells.CELLS_FROM`
vectors or more is searched by cells instead (:mod:`pao_postgres.searcher.cells`). Nothing here
imports SQLAlchemy or numpy at import time: every read is a :data:`~pao_postgres.searcher.reading.Rows`
of the search's one read transaction.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import threading
from typing import TYPE_CHECKING, Any, Callable, Sequence

from pao_embeddings import ahead, model, similar
from pao_postgres.searcher import cells
from pao_postgres.searcher.ranked import quote

if TYPE_CHECKING:
    from pao_embeddings.hybrid import Fused
    from pao_postgres.options import LongtermOptions
    from pao_postgres.searcher.method import Method
    from pao_postgres.searcher.reading import Rows

TOPIC_RESERVE = 0.25
"""Seconds kept before the caller's deadline for fusing and answering: a topic vector not
ready by then (the model loads once per process) costs the vectors, not the lexical hits."""


def vector_table(options: LongtermOptions) -> str:
    return f"{options.observations.table}_vectors"


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


SCAN_LIMIT = 200_000
"""Most vectors a process reads into its matrix (300 MB) when the store has no cells (written
before :mod:`pao_postgres.searcher.cells`); a larger one searches lexically until its next write
trains them (`pao doctor` says so)."""


def meta_of(rows: Rows, names: dict[str, str], sqlite: bool) -> dict[str, str]:
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
    meta = meta_of(rows, names_for(options, sqlite=sqlite), sqlite)
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
    meta = meta_of(rows, names, sqlite) if meta is None else meta
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


def with_vector_hits(options: LongtermOptions, rows: Rows, fused: Fused, found: dict[int, Any], *,
                     sqlite: bool = True) -> list[Any]:
    """The rows of the fused ranking (:func:`pao_embeddings.hybrid.lexical_and_vectors`), each scored by its
    fused score: the lexical ones from ``found`` (by id), the vector hits read."""
    wanted = [key for key, _ in fused.hits if key not in found]
    if wanted:
        found = found | {row.id: row for row in _observations(options, rows, "id", wanted, sqlite)}
    # a vector of an observation removed since the last refresh has no row: it is skipped
    return [found[key]._replace(score=score) for key, score in fused.hits if key in found]


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
    near = _nearest_first({(row.name, row.position) for row in kept})
    fetched = _observations(options, rows, "name", entities, sqlite)
    have = {row.id for row in kept}
    lowest = min(float(row.score) for row in kept)
    rank = {name: n for n, name in enumerate(entities)}
    extra = sorted((row for row in fetched if row.id not in have), key=lambda row: (rank[row.name], *near(row)))
    return [*kept, *(row._replace(score=lowest * (1 - (n + 1) / (len(extra) + 1))) for n, row in enumerate(extra))][:limit]


def _nearest_first(hits: set[tuple[str, int]]) -> Callable[[Any], tuple[int, int]]:
    """Sort key of an entity's other observations: those next to one of its hits first (the one after a hit
    before the one before it: a turn of a dialog is answered by the next), then by position; an entity
    without a hit (a related one) in its own order."""
    positions: dict[str, list[int]] = collections.defaultdict(list)
    for name, position in hits:
        positions[name].append(int(position))

    def key(row: Any) -> tuple[int, int]:
        around = positions.get(row.name)
        if not around:
            return (0, int(row.position))
        distance, side = min((abs(int(row.position) - hit), int(row.position) < hit) for hit in around)
        return (2 * distance + side, int(row.position))

    return key


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
