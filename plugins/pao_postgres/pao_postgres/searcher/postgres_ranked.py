"""The ``ranked`` search (a ``Method``) on PostgreSQL: one statement, one round trip.

Term statistics, weights, candidates and coverage are computed by the server in a
single statement whose text depends only on the store's table mapping and the
method's switches, never on the topic: the topic's terms and entity-name n-grams
travel as two ``text[]`` parameters. So a search costs one round trip, no query
building or SQL compilation in Python, and the text can be prepared once per
connection. The steps are those of :mod:`pao_postgres.searcher.retrieval`:

1. *frequencies*: a term whose lexemes ANALYZE lists among the most common elements
   is weighed from ``pg_stats`` (no scan); any other is counted, up to ``df_cap``;
2. *weights*: ``ln(1 + N / (df + 1))``, 0 for a term in ``df_cap`` rows or more;
3. *candidates*: the OR of the rarer terms' queries, ranked by ``ts_rank_cd``, at
   most ``pool`` of them, plus at most ``pool`` observations of entities the topic
   names (exactly, or by a rarer term in the name);
4. *coverage*: each candidate's share of the topic, returned with the topic's total
   weight and its number of weighed terms so the caller applies the floor.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from pao_postgres.searcher.ranked import quote

if TYPE_CHECKING:
    from pao_postgres.options import LongtermOptions
    from pao_postgres.searcher.method import Method
    from pao_postgres.searcher.reading import Rows
    from pao_postgres.searcher.terms import Topic


def ranked_postgres(options: LongtermOptions, rows: Rows, topic: Topic, fetch: int, method: Method) -> list[Any]:
    """The best ``fetch`` candidates, each with ``matched``, ``covered``, ``score``,
    and the topic's ``total`` weight and ``useful`` (weighed) term count."""
    obs = options.observations
    params = {
        "terms": list(topic.terms),
        "names": list(topic.names if method.entity_names else ()),
        "idf": method.coverage and method.idf,
        "cap": method.df_cap,
        "pool": method.pool,
        "fetch": fetch,
        "name_bonus": float(method.name_bonus),
        "table_name": _table(options, obs.table),
        "table": obs.table,
        "schema": options.schema or None,
        "column": obs.search_vector,
    }
    return rows(ranked_sql(options, method.entity_names, method.coverage), params)


def _table(options: LongtermOptions, name: str) -> str:
    return f"{quote(options.schema)}.{quote(name)}" if options.schema else quote(name)


@functools.lru_cache(maxsize=32)
def ranked_sql(options: LongtermOptions, entity_names: bool, coverage: bool) -> str:
    """The statement for one table mapping and method shape (psycopg ``%(name)s`` style)."""
    obs, ent = _table(options, options.observations.table), _table(options, options.entities.table)
    oc, ec = options.observations, options.entities
    o = {key: "o." + quote(getattr(oc, key)) for key in ("id", "entity_id", "content", "position", "created_at")}
    e = {key: "e." + quote(getattr(ec, key)) for key in ("id", "name", "entity_type")}
    cfg = f"'{options.language}'::regconfig"
    vector = f"o.{quote(oc.search_vector)}" if oc.search_vector else f"to_tsvector({cfg}, {o['content']})"
    # A candidate carries what scoring and the answer need: no second visit to its row.
    carried = (
        f"{o['id']} AS id, {o['entity_id']} AS entity_id, {o['content']} AS content, {o['position']} AS position, "
        f"{o['created_at']} AS created_at, {vector} AS vector"
    )
    exact = f"lower({e['name']}) = ANY(CAST(%(names)s AS text[]))" if entity_names else "false"
    hit = f"h.vector @@ w.q OR to_tsvector({cfg}, {e['name']}) @@ w.q" if entity_names else "h.vector @@ w.q"
    pools = [
        f"text_pool AS (SELECT {carried}, ts_rank_cd({vector}, (SELECT q FROM rare), 32)::float8 AS rank "
        f"FROM {obs} o WHERE {vector} @@ (SELECT q FROM rare) ORDER BY rank DESC LIMIT %(pool)s)"
    ]
    if entity_names:
        pools += [
            # Materialised, so the pool's LIMIT cannot talk the planner into walking every
            # entity in key order instead of using the name indexes.
            f"named AS MATERIALIZED (SELECT {e['id']} AS id FROM {ent} e "
            f"WHERE to_tsvector({cfg}, {e['name']}) @@ (SELECT q FROM rare) OR {exact})",
            f"name_pool AS (SELECT {carried}, 0.0::float8 AS rank FROM {obs} o "
            f"WHERE {o['entity_id']} IN (SELECT id FROM named) LIMIT %(pool)s)",
        ]
    pooled = " UNION ALL ".join(f"SELECT * FROM {name}" for name in (["text_pool", "name_pool"] if entity_names else ["text_pool"]))
    covered = f"coalesce(sum(w.weight ORDER BY w.i) FILTER (WHERE {hit}), 0.0::float8)" if coverage else "0.0::float8"
    bonus = f"CASE WHEN {exact} THEN tt.bonus ELSE 0.0::float8 END" if coverage else "0.0::float8"
    scored = (
        f"hits AS (SELECT DISTINCT ON (id) * FROM ({pooled}) pooled ORDER BY id, rank DESC), "
        f"scored AS (SELECT {e['name']} AS name, {e['entity_type']} AS entity_type, h.content, h.position, "
        f"h.created_at, h.id, m.matched + (CASE WHEN {exact} THEN 1 ELSE 0 END) AS matched, m.covered + {bonus} AS covered, "
        f"h.rank FROM hits h JOIN {ent} e ON {e['id']} = h.entity_id CROSS JOIN totals tt CROSS JOIN LATERAL "
        f"(SELECT count(*) FILTER (WHERE {hit}) AS matched, {covered} AS covered FROM weights w WHERE w.weight > 0) m)"
    )
    return (
        f"WITH {_weighing_sql(obs, vector, cfg)}, {', '.join(pools)}, {scored} "
        "SELECT s.*, s.covered + s.rank AS score, tt.total, tt.useful FROM scored s CROSS JOIN totals tt "
        "ORDER BY score DESC, s.id LIMIT %(fetch)s"
    )


def _weighing_sql(obs: str, vector: str, cfg: str) -> str:
    """CTEs ``stats``, ``terms``, ``frequencies``, ``weights``, ``totals`` and ``rare``."""
    share = "st.freqs[array_position(st.elems, l.lexeme)]"
    return (
        # ANALYZE's view of the table: its size and its most common lexemes.
        "stats AS MATERIALIZED (SELECT greatest(1, (SELECT CASE WHEN c.reltuples > 0 THEN c.reltuples::bigint "
        f"ELSE (SELECT count(*) FROM {obs}) END FROM pg_class c WHERE c.oid = CAST(%(table_name)s AS regclass))) AS total, "
        "s.most_common_elems::text::text[] AS elems, s.most_common_elem_freqs AS freqs "
        "FROM (SELECT 1) one LEFT JOIN LATERAL (SELECT * FROM pg_stats s WHERE s.schemaname = coalesce(%(schema)s, "
        "current_schema()) AND s.tablename = %(table)s AND s.attname = %(column)s ORDER BY s.inherited LIMIT 1) s ON true), "
        # A term whose lexemes are all among the most common is as frequent as its rarest one.
        f"terms AS MATERIALIZED (SELECT t.i, plainto_tsquery({cfg}, t.term) AS q, "
        f"(SELECT CASE WHEN count(*) > 0 AND count(*) = count({share}) "
        f"THEN floor(min({share})::float8 * st.total::float8)::bigint END "
        f"FROM unnest(tsvector_to_array(to_tsvector({cfg}, t.term))) AS l(lexeme)) AS estimated "
        "FROM unnest(CAST(%(terms)s AS text[])) WITH ORDINALITY AS t(term, i) CROSS JOIN stats st), "
        # COALESCE and CASE are lazy: only the terms the statistics do not know are counted.
        "frequencies AS MATERIALIZED (SELECT t.i, t.q, CASE WHEN %(idf)s THEN coalesce(t.estimated, "
        f"(SELECT count(*) FROM (SELECT 1 FROM {obs} o WHERE {vector} @@ t.q LIMIT %(cap)s) counted)) END AS df "
        "FROM terms t), "
        "weights AS MATERIALIZED (SELECT f.i, f.q, coalesce(f.df >= %(cap)s, false) AS common, "
        "CASE WHEN NOT %(idf)s THEN 1.0::float8 WHEN f.df >= %(cap)s THEN 0.0::float8 "
        "ELSE ln(1.0::float8 + st.total::float8 / (f.df + 1)::float8) END AS weight FROM frequencies f CROSS JOIN stats st), "
        "totals AS MATERIALIZED (SELECT coalesce(sum(w.weight ORDER BY w.i), 0.0::float8) AS total, "
        "count(*) FILTER (WHERE w.weight > 0) AS useful, "
        "%(name_bonus)s::float8 * coalesce(avg(w.weight) FILTER (WHERE w.weight > 0), 1.0::float8) AS bonus FROM weights w), "
        # The rarer terms fetch candidates (an OR of their queries, in topic order).
        "rare AS MATERIALIZED (SELECT CAST(string_agg('(' || w.q::text || ')', ' | ' ORDER BY w.i) AS tsquery) AS q "
        "FROM weights w WHERE NOT w.common AND numnode(w.q) > 0)"
    )
