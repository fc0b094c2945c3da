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
    """How one mode searches. ``min_fraction``/``min_matches`` form the relevance floor:
    an observation must cover at least ``max(min(min_matches, n), ceil(min_fraction * n))``
    of a topic's ``n`` terms; ``relative`` drops what covers less than the best hit
    minus ``relative`` (``None``: no relative cut)."""

    any_term: bool = True
    coverage: bool = True
    entity_names: bool = True
    min_matches: int = 2
    min_fraction: float = 0.0
    relative: int | None = None
    candidates: int = 200

    def required(self, term_count: int) -> int:
        if not self.coverage or term_count == 0:
            return 0
        return max(min(self.min_matches, term_count), math.ceil(self.min_fraction * term_count))


METHODS: dict[str, Method | None] = {
    "original": None,
    "any": Method(coverage=False, entity_names=False, min_matches=0),
    "ranked": Method(),
}


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
        elif store.is_sqlite:
            rows = _ranked_sqlite(store, connection, topic, limit, method)
        else:
            rows = _ranked_postgres(store, connection, topic, limit, method)
        rows = _floor(rows, topic, method)
    return [make_item(r.name, r.entity_type, r.content, r.position, r.created_at, r.score) for r in rows[:limit]]


def _floor(rows: list[Any], topic: Topic, method: Method | None) -> list[Any]:
    if method is None or not method.coverage:
        return rows
    required = method.required(len(topic.terms))
    kept = [row for row in rows if row.matched >= required]
    if kept and method.relative is not None:
        best = max(row.matched for row in kept)
        kept = [row for row in kept if row.matched >= best - method.relative]
    return kept


# -- original mode ---------------------------------------------------------------


def _original(store: LongtermStore, connection: sa.Connection, topic: Topic, limit: int) -> list[Any]:
    t = store.tables
    obs, ent = t.observations, t.entities
    columns = (ent.c.name, ent.c.entity_type, obs.c.content, obs.c.position, obs.c.created_at)
    joined = obs.join(ent, ent.c.id == obs.c.entity_id)
    rows: list[Any] = []
    if store.is_sqlite and topic.words:
        match = " ".join(fts5_phrase(word) for word in topic.words)
        rows = _sqlite_rows(store, connection, match, None, limit, coverage=False)
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


def _ranked_postgres(store: LongtermStore, connection: sa.Connection, topic: Topic, limit: int, method: Method) -> list[Any]:
    t = store.tables
    obs, ent = t.observations, t.entities
    names = topic.names if method.entity_names else ()
    if not topic.terms and not names:
        return []
    cfg = t.regconfig()
    term_queries = [sa.func.plainto_tsquery(cfg, sa.bindparam(f"t{i}", term)) for i, term in enumerate(topic.terms)]
    parts = [q.label(f"t{i}") for i, q in enumerate(term_queries)]
    any_query = functools.reduce(lambda a, b: a.op("||")(b), term_queries) if term_queries else None
    parts.append((any_query if any_query is not None else sa.cast(sa.literal(""), sa.Text)).label("anyq"))
    q = sa.select(*parts).cte("q")
    vector = t.search_vector("postgresql")
    name_vector = sa.func.to_tsvector(cfg, ent.c.name)
    exact = sa.func.lower(ent.c.name).in_(names) if names else sa.false()

    selects = []
    if term_queries:
        selects.append(sa.select(obs.c.id).select_from(obs).join(q, sa.true()).where(vector.op("@@")(q.c.anyq)))
    entity_hit = sa.or_(name_vector.op("@@")(q.c.anyq), exact) if method.entity_names and term_queries else exact
    if method.entity_names:
        selects.append(
            sa.select(obs.c.id).select_from(obs.join(ent, ent.c.id == obs.c.entity_id).join(q, sa.true())).where(entity_hit)
        )
    hits = sa.union(*selects).cte("hits") if len(selects) > 1 else selects[0].cte("hits")

    matched: sa.ColumnElement = sa.literal(0)
    for i in range(len(term_queries)):
        term = q.c[f"t{i}"]
        in_text = vector.op("@@")(term)
        hit = sa.or_(in_text, name_vector.op("@@")(term)) if method.entity_names else in_text
        matched = matched + sa.case((hit, 1), else_=0)
    if method.entity_names:
        matched = matched + sa.case((exact, 1), else_=0)
    rank = sa.func.ts_rank_cd(vector, q.c.anyq, 32) if term_queries else sa.literal(0.0)
    matched_col = matched.label("matched")
    order = [matched_col.desc(), rank.desc(), obs.c.id] if method.coverage else [rank.desc(), obs.c.id]
    query = (
        sa.select(
            ent.c.name, ent.c.entity_type, obs.c.content, obs.c.position, obs.c.created_at, matched_col,
            ((matched if method.coverage else 0) + rank).label("score"),
        )
        .select_from(hits.join(obs, obs.c.id == hits.c.id).join(ent, ent.c.id == obs.c.entity_id).join(q, sa.true()))
        .order_by(*order)
        .limit(max(limit, method.candidates) if method.relative is not None else limit * 4)
    )
    return list(connection.execute(query))


# -- ranked and any modes: SQLite (FTS5) -------------------------------------------


def _ranked_sqlite(store: LongtermStore, connection: sa.Connection, topic: Topic, limit: int, method: Method) -> list[Any]:
    names = topic.names if method.entity_names else ()
    if not topic.terms and not names:
        return []
    match = " OR ".join(fts5_phrase(term) for term in topic.terms) if topic.terms else None
    fetch = max(limit, method.candidates) if method.relative is not None else limit * 4
    return _sqlite_rows(store, connection, match, names, fetch, coverage=method.coverage, terms=topic.terms)


def _sqlite_rows(
    store: LongtermStore,
    connection: sa.Connection,
    match: str | None,
    names: tuple[str, ...] | None,
    limit: int,
    *,
    coverage: bool,
    terms: tuple[str, ...] = (),
) -> list[Any]:
    t = store.tables
    fts = _quote(t.fts_table)
    o, e = t.observations, t.entities
    oc = {key: _quote(o.c[key].name) for key in ("id", "entity_id", "content", "position", "created_at")}
    ec = {key: _quote(e.c[key].name) for key in ("id", "name", "entity_type")}
    params: dict[str, Any] = {"limit": limit}
    sources = []
    if match is not None:
        params["match"] = match
        sources.append(f"SELECT rowid AS id, -bm25({fts}) AS rank FROM {fts} WHERE {fts} MATCH :match")
    if names:
        slots = ", ".join(f":n{i}" for i in range(len(names)))
        params.update({f"n{i}": name for i, name in enumerate(names)})
        sources.append(
            f"SELECT o.{oc['id']} AS id, 0.0 AS rank FROM {_quote(o.name)} o JOIN {_quote(e.name)} e "
            f"ON e.{ec['id']} = o.{oc['entity_id']} WHERE lower(e.{ec['name']}) IN ({slots})"
        )
    matched = "0"
    if coverage:
        flags = []
        for i, term in enumerate(terms):
            params[f"t{i}"] = fts5_phrase(term)
            flags.append(f"(h.id IN (SELECT rowid FROM {fts} WHERE {fts} MATCH :t{i}))")
        if names:
            flags.append(f"(lower(e.{ec['name']}) IN ({slots}))")
        matched = " + ".join(flags) or "0"
    score = f"({matched}) + h.rank / (1.0 + h.rank)" if coverage else "h.rank / (1.0 + h.rank)"
    order = "matched DESC, h.rank DESC, h.id" if coverage else "h.rank DESC, h.id"
    sql = (
        f"WITH hits AS (SELECT id, max(rank) AS rank FROM ({' UNION ALL '.join(sources)}) GROUP BY id) "
        f"SELECT e.{ec['name']} AS name, e.{ec['entity_type']} AS entity_type, o.{oc['content']} AS content, "
        f"o.{oc['position']} AS position, o.{oc['created_at']} AS created_at, {matched} AS matched, {score} AS score "
        f"FROM hits h JOIN {_quote(o.name)} o ON o.{oc['id']} = h.id JOIN {_quote(e.name)} e ON e.{ec['id']} = o.{oc['entity_id']} "
        f"ORDER BY {order} LIMIT :limit"
    )
    return list(connection.execute(sa.text(sql), params))


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'
