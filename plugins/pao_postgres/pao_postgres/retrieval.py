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
    than this share of the best observation's coverage.
    """

    any_term: bool = True
    coverage: bool = True
    idf: bool = True
    entity_names: bool = True
    floor: float = 0.0
    min_matches: int = 0
    name_bonus: float = 1.0
    relative: float = 0.0
    df_cap: int = 5000

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
            ranked = _ranked_sqlite if store.is_sqlite else _ranked_postgres
            rows = _floor(ranked(store, connection, topic, limit * 4, method, weights), topic, method, weights)
    return [make_item(r.name, r.entity_type, r.content, r.position, r.created_at, r.score) for r in rows[:limit]]


def _floor(rows: list[Any], topic: Topic, method: Method, weights: Weights) -> list[Any]:
    if not method.coverage:
        return rows
    required = method.required(len(topic.terms))
    least = method.floor * weights.total
    kept = [row for row in rows if row.matched >= required and row.covered >= least - 1e-9]
    if kept and method.relative:
        best = max(row.covered for row in kept)
        kept = [row for row in kept if row.covered >= method.relative * best - 1e-9]
    return kept


def _weights(store: LongtermStore, connection: sa.Connection, topic: Topic, method: Method) -> Weights:
    """Term rarity from the store itself (capped document counts, one statement)."""
    count = len(topic.terms)
    if not (method.coverage and method.idf) or count == 0:
        return Weights((1.0,) * count, method.name_bonus)
    params: dict[str, Any] = {"cap": method.df_cap}
    params.update({f"t{i}": _match_term(store, term) for i, term in enumerate(topic.terms)})
    t = store.tables
    if store.is_sqlite:
        fts = _quote(t.fts_table)
        counts = [f"(SELECT count(*) FROM (SELECT 1 FROM {fts} WHERE {fts} MATCH :t{i} LIMIT :cap))" for i in range(count)]
        size = f"(SELECT count(*) FROM {_quote(t.observations.name)})"
    else:
        vector = _compiled(connection, t.search_vector("postgresql"))
        table = _compiled(connection, t.observations)
        config = f"'{store.options.language}'::regconfig"
        counts = [
            f"(SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {vector} @@ plainto_tsquery({config}, :t{i}) LIMIT :cap) s)"
            for i in range(count)
        ]
        # The planner's row estimate (kept by ANALYZE) instead of counting a large table.
        size = f"(SELECT CASE WHEN c.reltuples > 0 THEN c.reltuples::bigint ELSE (SELECT count(*) FROM {table}) END FROM pg_class c WHERE c.oid = CAST(:table_name AS regclass))"
        params["table_name"] = table
    row = connection.execute(sa.text(f"SELECT {size}, {', '.join(counts)}"), params).one()
    total = max(1, int(row[0]))
    terms = tuple(math.log(1 + total / (int(df) + 1)) for df in row[1:])
    return Weights(terms, method.name_bonus * (sum(terms) / len(terms)))


def _match_term(store: LongtermStore, term: str) -> str:
    return fts5_phrase(term) if store.is_sqlite else term


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
        match = " ".join(fts5_phrase(word) for word in topic.words)
        rows = _sqlite_rows(store, connection, match, None, limit)
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


# -- ranked and any modes: PostgreSQL ----------------------------------------------


def _ranked_postgres(
    store: LongtermStore, connection: sa.Connection, topic: Topic, fetch: int, method: Method, weights: Weights
) -> list[Any]:
    t = store.tables
    obs, ent = t.observations, t.entities
    names = topic.names if method.entity_names else ()
    cfg = t.regconfig()
    term_queries = [sa.func.plainto_tsquery(cfg, sa.bindparam(f"t{i}", term)) for i, term in enumerate(topic.terms)]
    parts = [q.label(f"t{i}") for i, q in enumerate(term_queries)]
    any_query = functools.reduce(lambda a, b: a.op("||")(b), term_queries) if term_queries else None
    parts.append((any_query if any_query is not None else sa.func.to_tsquery("")).label("anyq"))
    q = sa.select(*parts).cte("q")
    vector = t.search_vector("postgresql")
    name_vector = sa.func.to_tsvector(cfg, ent.c.name)
    exact = sa.func.lower(ent.c.name).in_(names) if names else sa.false()

    # Two index-backed candidate sets (text matches, entity matches), not one OR that scans.
    selects = []
    if term_queries:
        selects.append(sa.select(obs.c.id).select_from(obs).join(q, sa.true()).where(vector.op("@@")(q.c.anyq)))
    if method.entity_names:
        by_name = sa.or_(name_vector.op("@@")(q.c.anyq), exact) if term_queries else exact
        selects.append(
            sa.select(obs.c.id).select_from(obs.join(ent, ent.c.id == obs.c.entity_id).join(q, sa.true())).where(by_name)
        )
    hits = (sa.union(*selects) if len(selects) > 1 else selects[0]).cte("hits")

    matched: sa.ColumnElement = sa.literal(0)
    covered: sa.ColumnElement = sa.literal(0.0)
    for i in range(len(term_queries)):
        term = q.c[f"t{i}"]
        hit = vector.op("@@")(term)
        if method.entity_names:
            hit = sa.or_(hit, name_vector.op("@@")(term))
        matched = matched + sa.case((hit, 1), else_=0)
        covered = covered + sa.case((hit, weights.terms[i]), else_=0.0)
    if method.entity_names:
        matched = matched + sa.case((exact, 1), else_=0)
        covered = covered + sa.case((exact, weights.name_bonus), else_=0.0)
    rank = sa.func.ts_rank_cd(vector, q.c.anyq, 32) if term_queries else sa.literal(0.0)
    score = (covered + rank) if method.coverage else rank
    query = (
        sa.select(
            ent.c.name, ent.c.entity_type, obs.c.content, obs.c.position, obs.c.created_at,
            matched.label("matched"), covered.label("covered"), score.label("score"),
        )
        .select_from(hits.join(obs, obs.c.id == hits.c.id).join(ent, ent.c.id == obs.c.entity_id).join(q, sa.true()))
        .order_by(sa.desc("score"), obs.c.id)
        .limit(fetch)
    )
    return list(connection.execute(query))


# -- ranked and any modes: SQLite (FTS5) -------------------------------------------


def _ranked_sqlite(
    store: LongtermStore, connection: sa.Connection, topic: Topic, fetch: int, method: Method, weights: Weights
) -> list[Any]:
    names = topic.names if method.entity_names else ()
    match = " OR ".join(fts5_phrase(term) for term in topic.terms) if topic.terms else None
    return _sqlite_rows(store, connection, match, names, fetch, method=method, weights=weights, terms=topic.terms)


def _sqlite_rows(
    store: LongtermStore,
    connection: sa.Connection,
    match: str | None,
    names: tuple[str, ...] | None,
    limit: int,
    *,
    method: Method | None = None,
    weights: Weights | None = None,
    terms: tuple[str, ...] = (),
) -> list[Any]:
    t = store.tables
    fts = _quote(t.fts_table)
    o, e = t.observations, t.entities
    oc = {key: _quote(o.c[key].name) for key in ("id", "entity_id", "content", "position", "created_at")}
    ec = {key: _quote(e.c[key].name) for key in ("id", "name", "entity_type")}
    params: dict[str, Any] = {"limit": limit, "match": match or '""'}
    sources = []
    if match is not None:
        sources.append("SELECT id, rank FROM text_hits")
    name_test = "0"
    if names:
        slots = ", ".join(f":n{i}" for i in range(len(names)))
        params.update({f"n{i}": name for i, name in enumerate(names)})
        name_test = f"(lower(e.{ec['name']}) IN ({slots}))"
        sources.append(
            f"SELECT o.{oc['id']} AS id, 0.0 AS rank FROM {_quote(o.name)} o JOIN {_quote(e.name)} e "
            f"ON e.{ec['id']} = o.{oc['entity_id']} WHERE lower(e.{ec['name']}) IN ({slots})"
        )
    matched, covered = "0", "0.0"
    coverage = method is not None and method.coverage and weights is not None
    if coverage:
        flags, weighted = [], []
        for i, term in enumerate(terms):
            params[f"t{i}"] = fts5_phrase(term)
            params[f"w{i}"] = weights.terms[i]
            flag = f"(h.id IN (SELECT rowid FROM {fts} WHERE {fts} MATCH :t{i}))"
            flags.append(flag)
            weighted.append(f"(CASE WHEN {flag} THEN :w{i} ELSE 0.0 END)")
        params["bonus"] = weights.name_bonus
        weighted.append(f"(CASE WHEN {name_test} THEN :bonus ELSE 0.0 END)")
        matched = " + ".join([*flags, name_test])
        covered = " + ".join(weighted)
    score = f"({covered}) + h.rank / (1.0 + h.rank)" if coverage else "h.rank / (1.0 + h.rank)"
    sql = (
        # bm25() only works in the FTS query itself: materialise it before grouping.
        f"WITH text_hits AS MATERIALIZED (SELECT rowid AS id, -bm25({fts}) AS rank FROM {fts} WHERE {fts} MATCH :match), "
        f"hits AS (SELECT id, max(rank) AS rank FROM ({' UNION ALL '.join(sources)}) GROUP BY id) "
        f"SELECT e.{ec['name']} AS name, e.{ec['entity_type']} AS entity_type, o.{oc['content']} AS content, "
        f"o.{oc['position']} AS position, o.{oc['created_at']} AS created_at, {matched} AS matched, "
        f"{covered} AS covered, {score} AS score "
        f"FROM hits h JOIN {_quote(o.name)} o ON o.{oc['id']} = h.id JOIN {_quote(e.name)} e ON e.{ec['id']} = o.{oc['entity_id']} "
        f"ORDER BY score DESC, h.id LIMIT :limit"
    )
    return list(connection.execute(sa.text(sql), params))


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'
