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

``any``: the OR of terms with native ranking only (no coverage, names or floor): the
step between the two, kept for measurement.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any

import attrs
import sqlalchemy as sa

from pao_core.models import MemoryItem
from pao_postgres.engine import transaction
from pao_postgres.ranked import quote, ranked_postgres, ranked_sqlite, sqlite_all_terms
from pao_postgres.terms import Topic, analyse, fts5_phrase, like_pattern

if TYPE_CHECKING:
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

    def required(self, term_count: int) -> int:
        return min(self.min_matches, term_count) if self.coverage else 0


METHODS: dict[str, Method | None] = {
    "original": None,
    "any": Method(coverage=False, entity_names=False),
    "ranked": Method(floor=0.35, min_matches=2),
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


def run_method(store: LongtermStore, query: str, limit: int, deadline: float, method: Method | None) -> list[MemoryItem]:
    from pao_postgres.store import make_item

    topic = analyse(query)
    limit = max(1, int(limit))
    with transaction(store.engine(), deadline) as connection:
        if method is None:
            rows = _original(store, connection, topic, limit)
        elif not topic.terms and not (method.entity_names and topic.names):
            rows = []
        else:
            weights = _weights(store, connection, topic, method)
            ranked = ranked_sqlite if store.is_sqlite else ranked_postgres
            rows = _floor(ranked(store, connection, topic, limit * 4, method, weights), topic, method, weights)
    return [make_item(r.name, r.entity_type, r.content, r.position, r.created_at, r.score) for r in rows[:limit]]


def _floor(rows: list[Any], topic: Topic, method: Method, weights: Weights) -> list[Any]:
    if not method.coverage:
        return rows
    required = method.required(sum(1 for weight in weights.terms if weight > 0))
    least = method.floor * weights.total
    kept = [row for row in rows if row.matched >= required and row.covered >= least - 1e-9]
    if kept and method.relative:
        best = max(row.covered for row in kept)
        kept = [row for row in kept if row.covered >= method.relative * best - 1e-9]
    return kept


def _weights(store: LongtermStore, connection: sa.Connection, topic: Topic, method: Method) -> Weights:
    """Term rarity from the store itself: ``ln(1 + N / (df + 1))``, 0 for common terms."""
    count = len(topic.terms)
    if not (method.coverage and method.idf) or count == 0:
        return Weights((1.0,) * count, method.name_bonus)
    if store.is_sqlite:
        total, frequencies = _sqlite_frequencies(store, connection, topic.terms, method.df_cap)
    else:
        total, frequencies = _postgres_frequencies(store, connection, topic.terms, method.df_cap)
    common = tuple(df >= method.df_cap for df in frequencies)
    # A term in df_cap observations or more says as little as a stop word: weight 0.
    terms = tuple(0.0 if too_common else math.log(1 + total / (df + 1)) for df, too_common in zip(frequencies, common))
    useful = [weight for weight in terms if weight > 0]
    return Weights(terms, method.name_bonus * (sum(useful) / len(useful) if useful else 1.0), common)


def _sqlite_frequencies(
    store: LongtermStore, connection: sa.Connection, terms: tuple[str, ...], cap: int
) -> tuple[int, list[int]]:
    fts = quote(store.tables.fts_table)
    counts = [f"(SELECT count(*) FROM (SELECT 1 FROM {fts} WHERE {fts} MATCH :t{i} LIMIT :cap))" for i in range(len(terms))]
    params: dict[str, Any] = {f"t{i}": fts5_phrase(term) for i, term in enumerate(terms)} | {"cap": cap}
    size = f"(SELECT count(*) FROM {quote(store.tables.observations.name)})"
    row = connection.execute(sa.text(f"SELECT {size}, {', '.join(counts)}"), params).one()
    return max(1, int(row[0])), [int(df) for df in row[1:]]


def _postgres_frequencies(
    store: LongtermStore, connection: sa.Connection, terms: tuple[str, ...], cap: int
) -> tuple[int, list[int]]:
    """Common lexemes come from ANALYZE's statistics (no scan); only the rest are counted."""
    t = store.tables
    table = _compiled(connection, t.observations)
    config = f"'{store.options.language}'::regconfig"
    params: dict[str, Any] = {f"t{i}": term for i, term in enumerate(terms)}
    params |= {"table_name": table, "table": t.observations.name, "schema": store.options.schema or None}
    params["column"] = t.observations.c.search_vector.name if "search_vector" in t.observations.c else ""
    lexemes = ", ".join(f"tsvector_to_array(to_tsvector({config}, :t{i}))" for i in range(len(terms)))
    row = connection.execute(
        sa.text(
            f"SELECT (SELECT CASE WHEN c.reltuples > 0 THEN c.reltuples::bigint ELSE (SELECT count(*) FROM {table}) END "
            f"FROM pg_class c WHERE c.oid = CAST(:table_name AS regclass)), "
            f"(SELECT most_common_elems::text::text[] FROM pg_stats WHERE schemaname = coalesce(:schema, current_schema()) "
            f"AND tablename = :table AND attname = :column), "
            f"(SELECT most_common_elem_freqs FROM pg_stats WHERE schemaname = coalesce(:schema, current_schema()) "
            f"AND tablename = :table AND attname = :column), {lexemes}"
        ),
        params,
    ).one()
    total = max(1, int(row[0]))
    known = dict(zip(row[1] or [], row[2] or []))
    frequencies: list[int | None] = []
    for term_lexemes in row[3:]:
        shares = [known.get(lexeme) for lexeme in term_lexemes or []]
        # All lexemes among the most common: a phrase is at most as frequent as its rarest word.
        frequencies.append(int(min(shares) * total) if shares and None not in shares else None)
    unknown = [i for i, df in enumerate(frequencies) if df is None]
    if unknown:
        vector = _compiled(connection, t.search_vector("postgresql"))
        counts = [
            f"(SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {vector} @@ plainto_tsquery({config}, :t{i}) LIMIT :cap) s)"
            for i in unknown
        ]
        counted = connection.execute(sa.text(f"SELECT {', '.join(counts)}"), params | {"cap": cap}).one()
        for i, df in zip(unknown, counted):
            frequencies[i] = int(df)
    return total, [int(df or 0) for df in frequencies]


def _compiled(connection: sa.Connection, element: Any) -> str:
    if isinstance(element, sa.Table):
        return connection.dialect.identifier_preparer.format_table(element)
    return str(element.compile(dialect=connection.dialect))


# -- original mode ---------------------------------------------------------------


def _original(store: LongtermStore, connection: sa.Connection, topic: Topic, limit: int) -> list[Any]:
    t = store.tables
    obs, ent = t.observations, t.entities
    columns = (ent.c.name, ent.c.entity_type, obs.c.content, obs.c.position, obs.c.created_at)
    joined = obs.join(ent, ent.c.id == obs.c.entity_id)
    rows: list[Any] = []
    if store.is_sqlite and topic.words:
        rows = sqlite_all_terms(store, connection, topic.words, limit)
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
