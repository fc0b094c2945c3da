"""Search modes, in each dialect's own query language.

``original``: the original system's behaviour. PostgreSQL ``plainto_tsquery`` ranked by
``ts_rank`` (every word must match); SQLite FTS5 with all words required, ranked by
``bm25()``; when that finds nothing, a per-keyword ``ILIKE``/``LIKE`` fallback.

``ranked`` (default): long topics rarely match every word, so any content term may
match (an OR of terms), ranked first by *coverage* (how many distinct topic terms an
observation matches in its text or its entity's name, plus one when the topic names
the entity exactly) and then by ``ts_rank_cd``/``bm25()``. Task words ("fix",
"update") are dropped, and a relevance floor keeps only observations that cover
enough of the topic, so an unrelated topic returns nothing rather than noise.

The steps between the two (the OR of terms with native ranking only, each ranking step
alone) are ``Method`` values (:mod:`pao_postgres.searcher.method`) that ``benches/longterm_eval.py``
measures; they are no mode. Every mode reads through one read transaction
(:func:`pao_postgres.searcher.reading.reading`): no SQLAlchemy on the search path.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from pao_postgres.items import make_item
from pao_postgres.searcher.method import METHODS, Method, Weights
from pao_postgres.searcher.ranked import quote, ranked_sqlite
from pao_postgres.searcher.reading import Rows, reading
from pao_postgres.searcher.terms import Topic, analyse, fts5_phrase

if TYPE_CHECKING:
    from pao_core.models import MemoryItem
    from pao_embeddings.hybrid import Ranking, VectorSearch
    from pao_postgres.options import LongtermOptions


def search(options: LongtermOptions, home: Path, query: str, limit: int, deadline: float,
           mode: str | None = None) -> list[MemoryItem]:
    """Search the store of ``options`` for ``query`` with ``mode`` (a key of :data:`METHODS`;
    the configured one by default)."""
    return run_method(options, home, query, limit, deadline, METHODS[mode or options.mode])


def run_method(options: LongtermOptions, home: Path, query: str, limit: int, deadline: float,
               method: Method | None) -> list[MemoryItem]:
    topic = analyse(query)
    limit = max(1, int(limit))
    if not options.url.strip() and not options.sqlite_file(home).exists():
        return []
    if method is not None:
        return _ranked(options, home, topic, limit, deadline, method)
    from pao_postgres.searcher.original import original  # the original mode: only when configured

    with reading(options, home, deadline) as rows:
        return _items(original(options, rows, topic, limit)[:limit])


def _ranked(options: LongtermOptions, home: Path, topic: Topic, limit: int, deadline: float,
            method: Method) -> list[MemoryItem]:
    """A ranked method on either dialect: the lexical candidates, fused with the vector hits
    (:func:`pao_embeddings.hybrid.lexical_and_vectors`), then the hits' entities' other observations."""
    sqlite = not options.url.strip()
    semantic = method.vectors and options.semantic
    lexical = bool(topic.terms or (method.entity_names and topic.names))
    if not (lexical or semantic):
        return []
    with reading(options, home, deadline) as rows:
        found: dict[int, Any] = {}

        def lexical_ranking() -> list[tuple[int, float]]:
            hits = _lexical(options, rows, topic, limit * 4, method, sqlite) if lexical else []
            found.update((row.id, row) for row in hits)
            return [(row.id, row.score) for row in hits]

        vectors = _vector_search(options, home, rows, topic, method, deadline, aside=lexical) if semantic else None
        from pao_embeddings.hybrid import lexical_and_vectors  # not needed until this runs: start-up stays light

        fused = lexical_and_vectors(lexical_ranking, vectors, method.rrf_k)
        if fused.vectors:
            from pao_postgres.searcher.vectors import with_vector_hits  # only when vectors were found

            kept = with_vector_hits(options, rows, fused, found, sqlite=sqlite)
        else:
            kept = [found[key] for key, _ in fused.hits]  # the lexical ranking alone
        if method.entity_siblings != "none" and kept:
            from pao_postgres.searcher.vectors import with_entity_siblings  # not needed until this runs

            kept = with_entity_siblings(options, rows, kept, limit, method.entity_siblings, fused.found_by_both(),
                                        related=method.related_entities, sqlite=sqlite)
    return _items(kept[:limit])


def _vector_search(options: LongtermOptions, home: Path, rows: Rows, topic: Topic, method: Method, deadline: float,
                   *, aside: bool) -> VectorSearch:
    """Starts the vector search of a ranked method: on the search's own connection, or (a server store
    with a lexical search to run, ``aside``) on a connection of its own meanwhile."""
    sqlite = not options.url.strip()

    def started() -> Callable[[], Ranking]:
        from pao_postgres.searcher.vectors import nearest_soon, vector_meta  # not needed until this runs

        meta = vector_meta(rows, options, topic.text, sqlite=sqlite)
        if not meta:
            return list
        key = str(options.sqlite_file(home)) if sqlite else _server_key(options)
        running = _vectors_aside(options, key, topic, method, deadline, meta) if aside and not sqlite else None
        if running is not None:
            return lambda: _waited(running, deadline)
        return nearest_soon(key, rows, options, topic.text, method, deadline, sqlite=sqlite, meta=meta)

    return started


def _vectors_aside(options: LongtermOptions, key: str, topic: Topic, method: Method, deadline: float,
                   meta: dict[str, str]) -> Any:
    """A server's vector search on a connection of its own, under way while the lexical statement
    runs on the first (their server times add up otherwise); None when the pool keeps only one."""
    if options.pool_size < 2:
        return None
    from pao_core.waiting import start  # a thread: only for a semantic search of a server store
    from pao_postgres.searcher.server_read import server_reading  # loads psycopg on use: start-up stays light
    from pao_postgres.searcher.vectors import nearest  # not needed until this runs: start-up stays light

    def search() -> list[tuple[int, float]]:
        with server_reading(options, deadline) as rows:
            return nearest(key, rows, options, topic.text, method, deadline, sqlite=False, meta=meta)

    return start(search, name="pao-longterm-vectors")


def _waited(aside: Any, deadline: float) -> list[tuple[int, float]]:
    """The vector hits searched aside; none when they are not there by ``deadline`` (the lexical
    hits are answered still, as when the topic's vector is late)."""
    try:
        return aside.result(timeout=max(0.0, deadline - time.monotonic()))
    except TimeoutError:
        return []


def _server_key(options: LongtermOptions) -> str:
    from pao_postgres.searcher.server_read import store_key  # loads psycopg on use: start-up stays light

    return store_key(options)


def _lexical(options: LongtermOptions, rows: Rows, topic: Topic, fetch: int, method: Method, sqlite: bool) -> list[Any]:
    """The lexical candidates above the method's floor."""
    if sqlite:
        weights = _weights(options, rows, topic, method)
        found = ranked_sqlite(options, rows, topic, fetch, method, weights)
        return _floor(found, method, weights.total, sum(1 for weight in weights.terms if weight > 0))
    from pao_postgres.searcher.postgres_ranked import ranked_postgres  # not needed until this runs: start-up stays light

    # One statement, one round trip; it weighs the terms too, so each row carries the
    # topic's totals for the floor.
    found = ranked_postgres(options, rows, topic, fetch, method)
    return _floor(found, method, found[0].total, found[0].useful) if found else []


def _items(rows: list[Any]) -> list[MemoryItem]:
    return [make_item(r.name, r.entity_type, r.content, r.position, r.created_at, r.score) for r in rows]


def _floor(rows: list[Any], method: Method, total: float, useful: int) -> list[Any]:
    """Keep what covers ``method.floor`` of the topic's ``total`` weight and enough of
    its ``useful`` (weighed) terms."""
    if not method.coverage:
        return rows
    required = method.required(useful)
    least = method.floor * total
    kept = [row for row in rows if row.matched >= required and row.covered >= least - 1e-9]
    if kept and method.relative:
        best = max(row.covered for row in kept)
        kept = [row for row in kept if row.covered >= method.relative * best - 1e-9]
    return kept


def _weights(options: LongtermOptions, rows: Rows, topic: Topic, method: Method) -> Weights:
    """Term rarity from the store itself: ``ln(1 + N / (df + 1))``, 0 for common terms."""
    count = len(topic.terms)
    if not (method.coverage and method.idf) or count == 0:
        return Weights((1.0,) * count, method.name_bonus)
    total, frequencies = _sqlite_frequencies(options, rows, topic.terms, method.df_cap)
    common = tuple(df >= method.df_cap for df in frequencies)
    # A term in df_cap observations or more says as little as a stop word: weight 0.
    terms = tuple(0.0 if too_common else math.log(1 + total / (df + 1)) for df, too_common in zip(frequencies, common))
    useful = [weight for weight in terms if weight > 0]
    return Weights(terms, method.name_bonus * (sum(useful) / len(useful) if useful else 1.0), common)


def _sqlite_frequencies(options: LongtermOptions, rows: Rows, terms: tuple[str, ...], cap: int) -> tuple[int, list[int]]:
    fts = quote(options.fts_table)
    counts = [f"(SELECT count(*) FROM (SELECT 1 FROM {fts} WHERE {fts} MATCH :t{i} LIMIT :cap))" for i in range(len(terms))]
    params: dict[str, Any] = {f"t{i}": fts5_phrase(term) for i, term in enumerate(terms)} | {"cap": cap}
    size = f"(SELECT count(*) FROM {quote(options.observations.table)})"
    row = rows(f"SELECT {size}, {', '.join(counts)}", params)[0]
    return max(1, int(row[0])), [int(df) for df in row[1:]]
