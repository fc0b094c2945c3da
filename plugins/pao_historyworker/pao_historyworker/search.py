"""Search over the local index: FTS5 bm25 with a relevance floor, fused with vectors.

The topic becomes an OR of its content words (stop words and generic task verbs
dropped), so an exchange that shares some of the words still ranks. An OR query
matches nearly anything, so each hit must also clear a floor: the IDF-weighted
share of the topic's words it contains (a word no exchange contains counts
against every hit, which is what sends an out-of-domain topic to zero results),
and a bm25 score not far below the best hit's.

When the ``embeddings`` extra is installed and the index holds vectors, the exchanges
whose cosine similarity to the topic clears ``vector_floor`` form a second ranking;
the two are fused by rank (reciprocal rank fusion), so a paraphrase that shares no
word with the conversation is still found, and neither score scale dominates.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import math
import os
import re
import sqlite3
from typing import Sequence

import attrs

from pao_core.models import MemoryItem
from pao_core.words import STOP_WORDS
from pao_core.words import words as words_of
from pao_embeddings.hybrid import VectorSettings, lexical_and_vectors
from pao_historyworker.index import TOKENIZER
from pao_historyworker.vectors import nearest_soon

_NOT_ALPHANUMERIC = re.compile(r"[\W_]+", re.UNICODE)

BM25_WEIGHTS = (1.0, 0.8, 0.3, 1.5)
"""Column weights: prompt, reply, tool output, context (project name and branch)."""

@attrs.frozen
class Tuning(VectorSettings):
    """The knobs of ranking and the floor (measured on the eval dev split, see benches/)."""

    min_coverage: float = 0.35
    relative_floor: float = 0.3
    candidates: int = 50
    session_weight: float = 0.5
    coverage_power: float = 2.0
    common_share: float = 0.05
    common_min: int = 500
    vector_floor: float = 0.37  # this corpus's fitted floor (VectorSettings: the other vector knobs)
    semantic: bool = True
    """Words found in more than ``common_share`` of all exchanges (and in more than
    ``common_min``, so a small history keeps its words) are dropped from the query."""
    """Hits are ranked by bm25 x coverage ** this: a hit with the topic's rare words beats
    one that repeats a common word often."""
    """Siblings of a hit (the other exchanges of its session) rank after the hits at
    this share of their session's best score; 0 turns session expansion off."""
    """Vector search (:class:`pao_embeddings.hybrid.VectorSettings`); ``semantic`` off means lexical search only."""


def query_words(topic: str) -> list[str]:
    """The topic's content words, lower-cased, in order, without repeats, split where FTS5's tokenizer splits."""
    found = dict.fromkeys(word for word in words_of(_NOT_ALPHANUMERIC.sub(" ", topic).lower())
                          if len(word) >= 2 and word not in STOP_WORDS)
    return list(found)[:32]


def _phrase(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


LEXICAL_RESERVE = 0.25
"""Seconds kept, before the caller's deadline, for the vector lookup, the fusion and the answer."""


def _stems(conn: sqlite3.Connection, words: Sequence[str]) -> dict[str, str]:
    """Each word's indexed term, using FTS5's own tokenizer (so stems match exactly)."""
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.stemmer USING fts5(word, tokenize='{TOKENIZER}')")
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.stemmer_vocab USING fts5vocab(temp, stemmer, 'instance')")
    conn.execute("DELETE FROM temp.stemmer")
    stems: dict[str, str] = {}
    for number, word in enumerate(words, start=1):
        conn.execute("INSERT INTO temp.stemmer(rowid, word) VALUES (?, ?)", (number, word))
    for doc, term in conn.execute("SELECT doc, term FROM temp.stemmer_vocab ORDER BY doc, offset"):
        stems.setdefault(words[doc - 1], term)
    conn.execute("DELETE FROM temp.stemmer")
    return stems


def _idf(total: int, df: int) -> float:
    return math.log((total - df + 0.5) / (df + 0.5) + 1.0)


def search(
    conn: sqlite3.Connection, topic: str, limit: int, tuning: Tuning = Tuning(), deadline: float | None = None
) -> list[MemoryItem]:
    """The exchanges that match ``topic``, best first, above the floor.

    With a ``deadline`` (``time.monotonic()``), semantic search is given up, and the
    lexical hits returned alone, when the topic's vector is not ready
    :data:`LEXICAL_RESERVE` seconds before it (the model loads once per process).
    """
    if limit <= 0:
        return []
    vectors = None
    if tuning.semantic:
        vector_deadline = None if deadline is None else deadline - LEXICAL_RESERVE
        vectors = functools.partial(nearest_soon, conn, topic, tuning.vector_floor, tuning.vector_candidates,
                                    vector_deadline, tuning.vector_standard_floor)
    hits = lexical_and_vectors(lambda: lexical_hits(conn, topic, tuning), vectors, tuning.rrf_k).hits
    if tuning.session_weight > 0:
        hits = _with_session_siblings(conn, hits, limit, tuning.session_weight)
    return _items(conn, hits[:limit])


def lexical_hits(conn: sqlite3.Connection, topic: str, tuning: Tuning = Tuning()) -> list[tuple[int, float]]:
    """``(rowid, score)`` of the exchanges whose words match ``topic``, best first, above the floor."""
    words = query_words(topic)
    if not words:
        return []
    stems = _stems(conn, words)
    terms = sorted(set(stems.values()))
    if not terms:
        return []
    counted = conn.execute("SELECT value FROM meta WHERE key = 'exchanges'").fetchone()
    total = int(counted[0]) if counted else 0
    marks = ",".join("?" * len(terms))
    df = dict(conn.execute(f"SELECT term, doc FROM exchanges_vocab WHERE term IN ({marks})", terms).fetchall())
    total = max([total, 1, *df.values()])
    # a word in most exchanges says little and costs the most to rank: a stop word of this corpus
    common = max(tuning.common_share * total, tuning.common_min)
    specific = [term for term in terms if df.get(term, 0) <= common]
    terms = specific or terms
    idf = {term: _idf(total, df.get(term, 0)) for term in terms}
    match = " OR ".join(_phrase(term) for term in terms)
    weights = ", ".join(str(w) for w in BM25_WEIGHTS)
    marked = ", ".join(f"highlight(exchanges_fts, {column}, char(1), char(2))" for column in range(len(BM25_WEIGHTS)))
    # ORDER BY rank lets FTS5 sort internally, so highlight() runs for the returned rows only
    rows = conn.execute(
        f"SELECT rowid, -rank, {marked} FROM exchanges_fts WHERE exchanges_fts MATCH ? AND rank MATCH 'bm25({weights})'"
        " ORDER BY rank LIMIT ?",
        (match, tuning.candidates),
    ).fetchall()
    if not rows:
        return []
    scores = {row[0]: row[1] for row in rows}
    matched = _matched_terms(conn, {row[0]: row[2:] for row in rows}, stems)
    whole = sum(idf.values())
    coverage = {rowid: sum(idf[t] for t in matched.get(rowid, ())) / whole for rowid in scores}
    ranked = sorted(((rowid, score * coverage[rowid] ** tuning.coverage_power) for rowid, score in scores.items()), key=lambda r: -r[1])
    best = ranked[0][1]
    return [
        (rowid, score)
        for rowid, score in ranked
        if coverage[rowid] >= tuning.min_coverage and score >= tuning.relative_floor * best
    ]


def _with_session_siblings(
    conn: sqlite3.Connection, kept: list[tuple[int, float]], limit: int, weight: float
) -> list[tuple[int, float]]:
    """Add the other exchanges of the hits' sessions after the hits.

    A session is usually one task, and its follow-up turns ("who picks the key?")
    rarely repeat the topic's words, so they are found through their session.
    """
    if not kept or len(kept) >= limit:
        return kept
    hits = {rowid for rowid, _ in kept}
    marks = ",".join("?" * len(kept))
    session_of = dict(conn.execute(f"SELECT rowid, session_id FROM exchanges WHERE rowid IN ({marks})", list(hits)))
    best: dict[str, float] = {}
    for rowid, score in kept:
        best.setdefault(session_of[rowid], score)
    sessions = list(best)
    marks = ",".join("?" * len(sessions))
    siblings = conn.execute(
        f"SELECT rowid, session_id FROM exchanges WHERE session_id IN ({marks}) ORDER BY start_offset", sessions
    ).fetchall()
    lowest_hit = kept[-1][1]  # siblings rank after every hit, so scores stay in rank order
    extra = [(rowid, min(best[session] * weight, lowest_hit)) for rowid, session in siblings if rowid not in hits]
    extra.sort(key=lambda row: -row[1])  # stable: by session rank, then position in the session
    return kept + extra


_MARKED = re.compile("\x01([^\x02]*)\x02")


def _matched_terms(conn: sqlite3.Connection, highlighted: dict[int, Sequence[str]], stems: dict[str, str]) -> dict[int, set[str]]:
    """Which query terms each candidate contains, read from FTS5's own highlighting."""
    tokens = {
        rowid: {token.lower() for text in texts if text for token in _MARKED.findall(text)}
        for rowid, texts in highlighted.items()
    }
    unknown = sorted({token for found in tokens.values() for token in found} - set(stems))
    known = {**stems, **(_stems(conn, unknown) if unknown else {})}
    wanted = set(stems.values())
    return {rowid: {known[t] for t in found if known.get(t) in wanted} for rowid, found in tokens.items()}


SNIPPET_PROMPT = 300
SNIPPET_TOTAL = 700


def snippet(prompt: str, reply: str) -> str:
    """The user's turn and the reply, shortened for a briefing."""
    ask = _shorten(prompt, SNIPPET_PROMPT)
    answer = _shorten(reply, max(80, SNIPPET_TOTAL - len(ask)))
    return f"User: {ask}\nAssistant: {answer}" if answer else f"User: {ask}"


def _shorten(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def title(cwd: str, timestamp: dt.datetime | None) -> str:
    project = os.path.basename(cwd.rstrip("/")) or "unknown project"
    return f"{project} · {timestamp.date().isoformat()}" if timestamp else project


def _items(conn: sqlite3.Connection, kept: Sequence[tuple[int, float]]) -> list[MemoryItem]:
    if not kept:
        return []
    marks = ",".join("?" * len(kept))
    rows = {
        row[0]: row
        for row in conn.execute(
            "SELECT rowid, id, session_id, project, cwd, git_branch, timestamp, uuids, prompt, reply"
            f" FROM exchanges WHERE rowid IN ({marks})",
            [rowid for rowid, _ in kept],
        )
    }
    items = []
    # a row can vanish under a cached vector matrix while `pao history index` runs
    present = [(rowid, score) for rowid, score in kept if rowid in rows]
    for rank, (rowid, score) in enumerate(present, start=1):
        _, item_id, session_id, project, cwd, branch, stamp, uuids, prompt, reply = rows[rowid]
        timestamp = dt.datetime.fromisoformat(stamp) if stamp else None
        items.append(
            MemoryItem(
                backend="history",
                id=item_id,
                title=title(project, timestamp),
                text=snippet(prompt, reply),
                kind="exchange",
                timestamp=timestamp,
                score=round(score, 4),
                rank=rank,
                meta={
                    "session_id": session_id,
                    "project": project,
                    "cwd": cwd,
                    "git_branch": branch,
                    "uuids": json.loads(uuids),
                },
            )
        )
    return items
