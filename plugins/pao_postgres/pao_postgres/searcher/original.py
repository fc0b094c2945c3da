"""The ``original`` mode: the original system's behaviour, in each dialect's own language.

PostgreSQL: ``plainto_tsquery`` ranked by ``ts_rank`` (every word must match); SQLite: FTS5
with all words required, ranked by ``bm25()``; when that finds nothing, a per-keyword
``ILIKE``/``LIKE`` fallback ranked by how many keywords an observation contains, newest
first. Plain SQL on the search's read transaction (:data:`~pao_postgres.searcher.reading.Rows`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pao_postgres.searcher.ranked import quote, sqlite_all_terms
from pao_postgres.searcher.terms import Topic, like_pattern

if TYPE_CHECKING:
    from pao_postgres.options import LongtermOptions
    from pao_postgres.searcher.reading import Rows


def original(options: LongtermOptions, rows: Rows, topic: Topic, limit: int) -> list[Any]:
    """Rows with ``name``, ``entity_type``, ``content``, ``position``, ``created_at`` and ``score``."""
    sqlite = not options.url.strip()
    found: list[Any] = []
    if sqlite and topic.words:
        found = sqlite_all_terms(options, rows, topic.words, limit)
    elif not sqlite and topic.text:
        found = _all_words(options, rows, topic.text, limit)
    if found or not topic.keywords:
        return found
    return _any_keyword(options, rows, topic.keywords, limit, sqlite)


def _joined(options: LongtermOptions, sqlite: bool) -> tuple[str, dict[str, str]]:
    """The observations joined with their entities, and the columns a row carries."""
    o, e = options.observations, options.entities
    prefix = quote(options.schema) + "." if options.schema and not sqlite else ""
    joined = (f"{prefix}{quote(o.table)} o JOIN {prefix}{quote(e.table)} e "
              f"ON e.{quote(e.id)} = o.{quote(o.entity_id)}")
    columns = {
        "name": f"e.{quote(e.name)}", "entity_type": f"e.{quote(e.entity_type)}", "content": f"o.{quote(o.content)}",
        "position": f"o.{quote(o.position)}", "created_at": f"o.{quote(o.created_at)}", "id": f"o.{quote(o.id)}",
    }
    return joined, columns


def _selected(columns: dict[str, str]) -> str:
    return ", ".join(f"{columns[name]} AS {name}" for name in ("name", "entity_type", "content", "position", "created_at"))


def _all_words(options: LongtermOptions, rows: Rows, text: str, limit: int) -> list[Any]:
    joined, columns = _joined(options, sqlite=False)
    config = f"'{options.language}'::regconfig"
    column = options.observations.search_vector
    vector = f"o.{quote(column)}" if column else f"to_tsvector({config}, {columns['content']})"
    query = f"plainto_tsquery({config}, :topic)"
    return rows(
        f"SELECT {_selected(columns)}, ts_rank({vector}, {query}) AS score FROM {joined} "
        f"WHERE {vector} @@ {query} ORDER BY score DESC, {columns['id']} LIMIT :limit",
        {"topic": text, "limit": limit},
    )


def _any_keyword(options: LongtermOptions, rows: Rows, keywords: tuple[str, ...], limit: int, sqlite: bool) -> list[Any]:
    joined, columns = _joined(options, sqlite)
    like = "LIKE" if sqlite else "ILIKE"
    hits = [f"{columns['content']} {like} :k{i} ESCAPE '\\'" for i in range(len(keywords))]
    score = " + ".join(f"(CASE WHEN {hit} THEN 1 ELSE 0 END)" for hit in hits)
    params: dict[str, Any] = {f"k{i}": like_pattern(word) for i, word in enumerate(keywords)} | {"limit": limit}
    return rows(
        f"SELECT {_selected(columns)}, {score} AS score FROM {joined} WHERE {' OR '.join(hits)} "
        f"ORDER BY score DESC, {columns['created_at']} DESC, {columns['id']} LIMIT :limit",
        params,
    )
