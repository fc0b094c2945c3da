"""The ``ranked``/``any`` queries, one per dialect (see :mod:`pao_postgres.retrieval`).

Both run the same plan in their own language: fetch a bounded pool of candidates
(rare-term text matches ranked natively, plus observations of entities the topic
names), then score only that pool for coverage, so a common word in a large store
costs an index lookup, not a scan of everything it matches.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from pao_postgres.terms import Topic, fts5_phrase

if TYPE_CHECKING:
    from pao_postgres.retrieval import Method, Weights
    from pao_postgres.store import LongtermStore


def quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def ranked_postgres(
    store: LongtermStore, connection: sa.Connection, topic: Topic, fetch: int, method: Method, weights: Weights
) -> list[Any]:
    t = store.tables
    obs, ent = t.observations, t.entities
    names = topic.names if method.entity_names else ()
    cfg = t.regconfig()
    fetching = weights.candidate_terms(topic.terms)
    term_queries = [sa.func.plainto_tsquery(cfg, sa.bindparam(f"t{i}", term)) for i, term in enumerate(topic.terms)]
    fetch_queries = [sa.func.plainto_tsquery(cfg, sa.bindparam(f"c{i}", term)) for i, term in enumerate(fetching)]
    # Inline tsquery expressions (not a CTE): plainto_tsquery(regconfig, text) is
    # immutable, so the planner folds it and sees the terms when it picks an index.
    candidates = functools.reduce(lambda a, b: a.op("||")(b), fetch_queries) if fetch_queries else None
    vector = t.search_vector("postgresql")
    name_vector = sa.func.to_tsvector(cfg, ent.c.name)
    exact = sa.func.lower(ent.c.name).in_(names) if names else sa.false()

    # Separate index-backed candidate sets (text, entity names), each bounded.
    selects = []
    if candidates is not None:
        rank = sa.func.ts_rank_cd(vector, candidates, 32)
        selects.append(
            sa.select(obs.c.id, rank.label("rank")).where(vector.op("@@")(candidates))
            .order_by(rank.desc()).limit(method.pool)
        )
    if method.entity_names and (names or candidates is not None):
        by_name = sa.or_(name_vector.op("@@")(candidates), exact) if candidates is not None else exact
        # Materialised, so the pool's LIMIT cannot talk the planner into walking every
        # entity in key order instead of using the name indexes.
        named = sa.select(ent.c.id).where(by_name).cte("named").prefix_with("MATERIALIZED")
        selects.append(
            sa.select(obs.c.id, sa.literal(0.0).label("rank"))
            .where(obs.c.entity_id.in_(sa.select(named.c.id))).limit(method.pool)
        )
    if not selects:
        return []
    pooled = sa.union_all(*[s.subquery().select() for s in selects]).subquery("pooled")
    hits = sa.select(pooled.c.id, sa.func.max(pooled.c.rank).label("rank")).group_by(pooled.c.id).cte("hits")

    matched: sa.ColumnElement = sa.literal(0)
    covered: sa.ColumnElement = sa.literal(0.0)
    for i, term in enumerate(term_queries):
        if weights.terms[i] <= 0:
            continue
        hit = vector.op("@@")(term)
        if method.entity_names:
            hit = sa.or_(hit, name_vector.op("@@")(term))
        matched = matched + sa.case((hit, 1), else_=0)
        covered = covered + sa.case((hit, weights.terms[i]), else_=0.0)
    if method.entity_names:
        matched = matched + sa.case((exact, 1), else_=0)
        covered = covered + sa.case((exact, weights.name_bonus), else_=0.0)
    if not method.coverage:
        covered = sa.literal(0.0)
    scored = (
        sa.select(
            ent.c.name, ent.c.entity_type, obs.c.content, obs.c.position, obs.c.created_at, obs.c.id,
            matched.label("matched"), covered.label("covered"), hits.c.rank,
        )
        .select_from(hits.join(obs, obs.c.id == hits.c.id).join(ent, ent.c.id == obs.c.entity_id))
        .subquery("scored")
    )
    score = (scored.c.covered + scored.c.rank).label("score")
    query = sa.select(*scored.c, score).order_by(score.desc(), scored.c.id).limit(fetch)
    params = {f"c{i}": term for i, term in enumerate(fetching)}
    return list(connection.execute(query, params))


def ranked_sqlite(
    store: LongtermStore, connection: sa.Connection, topic: Topic, fetch: int, method: Method, weights: Weights
) -> list[Any]:
    names = topic.names if method.entity_names else ()
    fetching = weights.candidate_terms(topic.terms)
    match = " OR ".join(fts5_phrase(term) for term in fetching) if fetching else None
    return _sqlite_query(store, connection, match, names, fetch, method=method, weights=weights, terms=topic.terms)


def sqlite_all_terms(store: LongtermStore, connection: sa.Connection, words: tuple[str, ...], limit: int) -> list[Any]:
    """The original mode on SQLite: every word must match, ranked by ``bm25()``."""
    match = " AND ".join(fts5_phrase(word) for word in words)
    return _sqlite_query(store, connection, match, (), limit)


def _sqlite_query(
    store: LongtermStore,
    connection: sa.Connection,
    match: str | None,
    names: tuple[str, ...],
    limit: int,
    *,
    method: Method | None = None,
    weights: Weights | None = None,
    terms: tuple[str, ...] = (),
) -> list[Any]:
    t = store.tables
    fts = quote(t.fts_table)
    o, e = t.observations, t.entities
    oc = {key: quote(o.c[key].name) for key in ("id", "entity_id", "content", "position", "created_at")}
    ec = {key: quote(e.c[key].name) for key in ("id", "name", "entity_type")}
    pool = method.pool if method else limit
    params: dict[str, Any] = {"limit": limit, "pool": pool, "match": match or '""'}
    sources = []
    if match is not None:
        sources.append("SELECT id, rank FROM text_hits")
    name_test = "0"
    if names:
        slots = ", ".join(f":n{i}" for i in range(len(names)))
        params.update({f"n{i}": name for i, name in enumerate(names)})
        name_test = f"(lower(e.{ec['name']}) IN ({slots}))"
        sources.append(
            f"SELECT * FROM (SELECT o.{oc['id']} AS id, 0.0 AS rank FROM {quote(o.name)} o JOIN {quote(e.name)} e "
            f"ON e.{ec['id']} = o.{oc['entity_id']} WHERE lower(e.{ec['name']}) IN ({slots}) LIMIT :pool)"
        )
    if not sources:
        return []
    flag_columns, matched, covered = "", "0", "0.0"
    if method is not None and method.coverage and weights is not None:
        flags, counted, weighted = [], [name_test], [f"(CASE WHEN {name_test} THEN :bonus ELSE 0.0 END)"]
        params["bonus"] = weights.name_bonus
        for i, term in enumerate(terms):
            if weights.terms[i] <= 0:
                continue  # too common to count (and to read its whole doclist)
            params[f"t{i}"], params[f"w{i}"] = fts5_phrase(term), weights.terms[i]
            flags.append(f", (h.id IN (SELECT rowid FROM {fts} WHERE {fts} MATCH :t{i})) AS f{i}")
            counted.append(f"f.f{i}")
            weighted.append(f"f.f{i} * :w{i}")
        flag_columns, matched, covered = "".join(flags), " + ".join(counted), " + ".join(weighted)
    sql = (
        # bm25() only works in the FTS query itself: materialise it before grouping.
        f"WITH text_hits AS MATERIALIZED (SELECT rowid AS id, -bm25({fts}) AS rank FROM {fts} "
        f"WHERE {fts} MATCH :match ORDER BY bm25({fts}) LIMIT :pool), "
        f"hits AS MATERIALIZED (SELECT id, max(rank) AS rank FROM ({' UNION ALL '.join(sources)}) GROUP BY id), "
        f"flagged AS MATERIALIZED (SELECT h.id AS id, h.rank AS rank{flag_columns} FROM hits h), "
        f"scored AS MATERIALIZED (SELECT e.{ec['name']} AS name, e.{ec['entity_type']} AS entity_type, "
        f"o.{oc['content']} AS content, o.{oc['position']} AS position, o.{oc['created_at']} AS created_at, "
        f"{matched} AS matched, {covered} AS covered, f.rank AS rank, f.id AS id "
        f"FROM flagged f JOIN {quote(o.name)} o ON o.{oc['id']} = f.id "
        f"JOIN {quote(e.name)} e ON e.{ec['id']} = o.{oc['entity_id']}) "
        f"SELECT *, covered + rank / (1.0 + rank) AS score FROM scored ORDER BY score DESC, id LIMIT :limit"
    )
    return list(connection.execute(sa.text(sql), params))
