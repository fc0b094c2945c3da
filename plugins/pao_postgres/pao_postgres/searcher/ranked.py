"""The ``ranked`` query (a ``Method``) on SQLite (see :mod:`pao_postgres.searcher.retrieval`; the
PostgreSQL one is :mod:`pao_postgres.searcher.postgres_ranked`).

Both dialects run the same plan in their own language: fetch a bounded pool of
candidates (rare-term text matches ranked natively, plus observations of entities
the topic names), then score only that pool for coverage, so a common word in a
large store costs an index lookup, not a scan of everything it matches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pao_postgres.searcher.terms import Topic, fts5_phrase

if TYPE_CHECKING:
    from pao_postgres.options import LongtermOptions
    from pao_postgres.searcher.method import Method, Weights
    from pao_postgres.searcher.reading import Rows


def quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def ranked_sqlite(
    options: LongtermOptions, rows: Rows, topic: Topic, fetch: int, method: Method, weights: Weights
) -> list[Any]:
    names = topic.names if method.entity_names else ()
    fetching = weights.candidate_terms(topic.terms)
    match = " OR ".join(fts5_phrase(term) for term in fetching) if fetching else None
    return _sqlite_query(options, rows, match, names, fetch, method=method, weights=weights, terms=topic.terms)


def sqlite_all_terms(options: LongtermOptions, rows: Rows, words: tuple[str, ...], limit: int) -> list[Any]:
    """The original mode on SQLite: every word must match, ranked by ``bm25()``."""
    match = " AND ".join(fts5_phrase(word) for word in words)
    return _sqlite_query(options, rows, match, (), limit)


def _sqlite_query(
    options: LongtermOptions,
    rows: Rows,
    match: str | None,
    names: tuple[str, ...],
    limit: int,
    *,
    method: Method | None = None,
    weights: Weights | None = None,
    terms: tuple[str, ...] = (),
) -> list[Any]:
    fts = quote(options.fts_table)
    o, e = options.observations, options.entities
    oc = {key: quote(getattr(o, key)) for key in ("id", "entity_id", "content", "position", "created_at")}
    ec = {key: quote(getattr(e, key)) for key in ("id", "name", "entity_type")}
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
            f"SELECT * FROM (SELECT o.{oc['id']} AS id, 0.0 AS rank FROM {quote(o.table)} o JOIN {quote(e.table)} e "
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
        f"FROM flagged f JOIN {quote(o.table)} o ON o.{oc['id']} = f.id "
        f"JOIN {quote(e.table)} e ON e.{ec['id']} = o.{oc['entity_id']}) "
        f"SELECT *, covered + rank / (1.0 + rank) AS score FROM scored ORDER BY score DESC, id LIMIT :limit"
    )
    return rows(sql, params)
