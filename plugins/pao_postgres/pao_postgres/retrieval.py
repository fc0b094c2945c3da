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
alone) are ``Method`` values that ``benches/longterm_eval.py`` measures; they are no mode.
"""

from __future__ import annotations

import functools
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from pao_postgres.items import make_item
from pao_postgres.ranked import quote, ranked_sqlite, sqlite_all_terms
from pao_postgres.sqlite_read import Rows, reading
from pao_postgres.terms import Topic, analyse, fts5_phrase, like_pattern

if TYPE_CHECKING:
    import sqlalchemy as sa

    from pao_core.models import MemoryItem
    from pao_postgres.options import LongtermOptions
    from pao_postgres.store import LongtermStore


@attrs.frozen
class Method:
    """How one mode searches.

    ``coverage``: rank first by the share of the topic an observation covers, each
    term weighted by its rarity, ``ln(1 + N / (df + 1))`` (``idf``; else every term
    weighs 1). A term found nowhere in the store weighs most: an unrelated topic is
    mostly such terms, so its best match covers little of it. ``floor``: the share
    an observation must cover to be returned; ``min_matches``: and at least this many
    distinct terms (fewer when the topic has fewer; naming the entity exactly counts
    as one). ``name_bonus``: weight added, in units of the mean term weight, when the
    topic names the observation's entity. ``relative``: also drop what covers less
    than this share of the best observation's coverage. ``pool``: how many
    natively ranked candidates are scored for coverage.
    ``vectors``: also rank the observations by cosine similarity to the topic (those
    above ``vector_floor``, at most ``vector_candidates``; :mod:`pao_postgres.vectors`)
    and fuse the two rankings by ``1 / (rrf_k + rank)``. ``entity_siblings``: after the
    hits, the other observations of the hits' entities (an entity is usually one subject,
    and its other facts rarely repeat the topic's words), best entity first: of every
    hit's entity (``all``), of the entities with two hits or one both rankings found
    (``confirmed``: one stray hit does not bring its whole entity), or none (``none``);
    ``related_entities``: then those of the entities related to them (either direction).
    """

    any_term: bool = True
    coverage: bool = True
    idf: bool = True
    entity_names: bool = True
    floor: float = 0.0
    min_matches: int = 0
    name_bonus: float = 1.0
    relative: float = 0.0
    df_cap: int = 1000
    pool: int = 200
    vectors: bool = False
    vector_floor: float = 0.45
    vector_standard_floor: float = 0.0
    entity_siblings: str = "none"
    related_entities: bool = False
    vector_candidates: int = 10
    rrf_k: int = 60

    def required(self, term_count: int) -> int:
        return min(self.min_matches, term_count) if self.coverage else 0


METHODS: dict[str, Method | None] = {
    "original": None,
    # the vector floor: a cosine of this model and recipe, which separates the two corpora's
    # near-miss controls from their topics better than any per-query or per-store rescaling;
    # fitted on each labelled corpus and reported on the other (benches/retrieval_fit.py)
    "ranked": Method(floor=0.35, min_matches=2, vectors=True, vector_floor=0.50, entity_siblings="all",
                     related_entities=True),
}


@attrs.frozen
class Weights:
    """Per-term weights of one topic in one store."""

    terms: tuple[float, ...]
    name_bonus: float
    common: tuple[bool, ...] = ()

    def candidate_terms(self, terms: tuple[str, ...]) -> tuple[str, ...]:
        """The terms that fetch candidates: all but those too common to say anything
        (a term in ``df_cap`` observations or more, like a stop word)."""
        flags = self.common or (False,) * len(terms)
        return tuple(term for term, common in zip(terms, flags) if not common)

    @property
    def total(self) -> float:
        return sum(self.terms)


def search(store: LongtermStore, query: str, limit: int, deadline: float, mode: str) -> list[MemoryItem]:
    """Search ``store`` for ``query`` with ``mode`` (a key of :data:`METHODS`)."""
    return run_method(store, query, limit, deadline, METHODS[mode])


def reads_without_sqlalchemy(options: LongtermOptions) -> bool:
    """Whether searches of this store run without SQLAlchemy (a ranked mode: the embedded
    store on the standard library's sqlite3, a server on psycopg alone): the spawn path
    then never imports it."""
    return METHODS[options.mode] is not None


def search_embedded(options: LongtermOptions, home: Path, query: str, limit: int, deadline: float) -> list[MemoryItem]:
    """:func:`search` for a store where :func:`reads_without_sqlalchemy` holds."""
    method = METHODS[options.mode]
    assert method is not None
    return _ranked(options, home, analyse(query), max(1, int(limit)), deadline, method)


def run_method(store: LongtermStore, query: str, limit: int, deadline: float, method: Method | None) -> list[MemoryItem]:
    topic = analyse(query)
    limit = max(1, int(limit))
    if method is not None:
        return _ranked(store.options, store.home, topic, limit, deadline, method)
    from pao_postgres.engine import transaction  # loads sqlalchemy on use: start-up stays light

    with transaction(store.engine(), deadline) as connection:
        rows = _original(store, connection, topic, limit)
    return _items(rows[:limit])


def _ranked(options: LongtermOptions, home: Path, topic: Topic, limit: int, deadline: float,
            method: Method) -> list[MemoryItem]:
    """A ranked method on either dialect: the lexical candidates, fused with the vector hits,
    then the hits' entities' other observations."""
    sqlite = not options.url.strip()
    semantic = method.vectors and options.semantic
    lexical = bool(topic.terms or (method.entity_names and topic.names))
    if not (lexical or semantic) or (sqlite and not options.sqlite_file(home).exists()):
        return []
    with _reading(options, home, deadline) as rows:
        meta: dict[str, str] = {}
        if semantic:
            # not needed until this runs: start-up stays light
            from pao_postgres.vectors import nearest_soon, vector_meta, with_vector_hits

            meta = vector_meta(rows, options, topic.text, sqlite=sqlite)
        key = str(options.sqlite_file(home)) if sqlite else _server_key(options)
        aside = _vectors_aside(options, key, topic, method, deadline, meta) if meta and lexical and not sqlite else None
        vector_hits = nearest_soon(key, rows, options, topic.text, method, deadline, sqlite=sqlite, meta=meta) \
            if meta and not aside else None
        kept: list[Any] = []
        if lexical:
            kept = _lexical(options, rows, topic, limit * 4, method, sqlite)
        found_by_both: set[int] = set()
        if meta:
            near = _waited(aside, deadline) if aside else vector_hits()  # type: ignore[misc]
            found_by_both = {row.id for row in kept} & {key for key, _ in near}
            kept = with_vector_hits(options, rows, kept, near, method.rrf_k, sqlite=sqlite) if near else kept
        if method.entity_siblings != "none" and kept:
            from pao_postgres.vectors import with_entity_siblings  # not needed until this runs: start-up stays light

            kept = with_entity_siblings(options, rows, kept, limit, method.entity_siblings, found_by_both,
                                        related=method.related_entities, sqlite=sqlite)
    return _items(kept[:limit])


def _vectors_aside(options: LongtermOptions, key: str, topic: Topic, method: Method, deadline: float,
                   meta: dict[str, str]) -> Any:
    """A server's vector search on a connection of its own, under way while the lexical statement
    runs on the first (their server times add up otherwise); None when the pool keeps only one."""
    if options.pool_size < 2:
        return None
    from pao_core.waiting import start  # a thread: only for a semantic search of a server store
    from pao_postgres.server_read import server_reading  # loads psycopg on use: start-up stays light
    from pao_postgres.vectors import nearest  # not needed until this runs: start-up stays light

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


def _reading(options: LongtermOptions, home: Path, deadline: float) -> Any:
    if not options.url.strip():
        return reading(options.sqlite_file(home), deadline)
    from pao_postgres.server_read import server_reading  # loads psycopg on use: start-up stays light

    return server_reading(options, deadline)


def _server_key(options: LongtermOptions) -> str:
    from pao_postgres.server_read import store_key  # loads psycopg on use: start-up stays light

    return store_key(options)


def _lexical(options: LongtermOptions, rows: Rows, topic: Topic, fetch: int, method: Method, sqlite: bool) -> list[Any]:
    """The lexical candidates above the method's floor."""
    if sqlite:
        weights = _weights(options, rows, topic, method)
        found = ranked_sqlite(options, rows, topic, fetch, method, weights)
        return _floor(found, method, weights.total, sum(1 for weight in weights.terms if weight > 0))
    from pao_postgres.postgres_ranked import ranked_postgres  # not needed until this runs: start-up stays light

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


# -- original mode ---------------------------------------------------------------


def _original(store: LongtermStore, connection: sa.Connection, topic: Topic, limit: int) -> list[Any]:
    import sqlalchemy as sa  # loads sqlalchemy on use: start-up stays light

    t = store.tables
    obs, ent = t.observations, t.entities
    columns = (ent.c.name, ent.c.entity_type, obs.c.content, obs.c.position, obs.c.created_at)
    joined = obs.join(ent, ent.c.id == obs.c.entity_id)
    rows: list[Any] = []
    if store.is_sqlite and topic.words:
        rows = sqlite_all_terms(store.options, lambda sql, params: list(connection.exec_driver_sql(sql, params)), topic.words, limit)
    elif not store.is_sqlite and topic.text:
        tsquery = sa.func.plainto_tsquery(t.regconfig(), sa.bindparam("topic", topic.text))
        vector = t.search_vector("postgresql")
        score = sa.func.ts_rank(vector, tsquery).label("score")
        query = sa.select(*columns, score).select_from(joined).where(vector.op("@@")(tsquery))
        rows = list(connection.execute(query.order_by(score.desc(), obs.c.id).limit(limit)))
    if rows or not topic.keywords:
        return rows
    like = obs.c.content.like if store.is_sqlite else obs.c.content.ilike
    hits = [like(sa.bindparam(f"k{i}", like_pattern(word)), escape="\\") for i, word in enumerate(topic.keywords)]
    score = functools.reduce(lambda a, b: a + b, [sa.case((hit, 1), else_=0) for hit in hits]).label("score")
    query = sa.select(*columns, score).select_from(joined).where(sa.or_(*hits))
    return list(connection.execute(query.order_by(score.desc(), obs.c.created_at.desc(), obs.c.id).limit(limit)))
