"""Exchange vectors in the history index, and nearest-neighbour search over them.

``pao history index`` embeds every exchange that has no vector yet (new ones, or all
of them after the ``embeddings`` extra is installed or :data:`RECIPE` changes) and
stores it as a float32 blob in ``vectors``. A search reads all vectors once per
process into one numpy matrix, reloaded when the index's ``generation`` changes,
and compares the topic with every row (brute force: 100,000 rows are 150 MB and
one matrix-vector product). Nothing here imports numpy unless the extra is installed.
"""

from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING, Callable, Sequence

import attrs

from pao_embeddings import model as embeddings
from pao_embeddings import similar
from pao_historyworker.meta import bump_generation, meta_value

if TYPE_CHECKING:
    import numpy as np

RECIPE = f"{embeddings.MODEL_NAME} mean(prompt, prompt+reply[:128 tokens]) v2"
"""What a stored vector is of: stored in ``meta``; a different recipe re-embeds everything."""
EXCHANGE_TOKENS = 128
"""How much of an exchange's whole text is read: its first 128 tokens carry the topic, and
indexing costs about half of the model's full 256 (same eval figures, benches/README.md)."""
EMBED_CHUNK = 128
"""Exchanges embedded per transaction: an interrupted run keeps what it finished."""


def exchange_vectors(encoder: embeddings.Encoder, exchanges: Sequence[tuple[str, str]]) -> np.ndarray:
    """An exchange's vector: the mean of its prompt's and its whole text's unit vectors.

    Its dot product with a topic's vector is the mean of the two cosines. The prompt
    says what the exchange is about; the whole text (its first :data:`EXCHANGE_TOKENS`
    tokens) adds the reply's words. Measured on the eval dev split, the mean separates
    relevant exchanges from out-of-domain topics better than either alone (benches/README.md).
    """
    prompts = encoder.encode([prompt for prompt, _ in exchanges])
    whole = encoder.encode([f"{prompt}\n{reply}" for prompt, reply in exchanges], max_tokens=EXCHANGE_TOKENS)
    return (prompts + whole) / 2


@attrs.frozen
class EmbedReport:
    embedded: int
    elapsed_s: float


def embed_missing(
    conn: sqlite3.Connection, progress: Callable[[int, int], None] | None = None
) -> EmbedReport:
    """Embed the exchanges that have no vector of the current recipe."""
    started = time.monotonic()
    if meta_value(conn, "vectors_recipe") != RECIPE:
        with conn:
            conn.execute("DELETE FROM vectors")
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('vectors_recipe', ?)", (RECIPE,))
    missing = [
        rowid
        for (rowid,) in conn.execute(
            "SELECT rowid FROM exchanges WHERE rowid NOT IN (SELECT rowid FROM vectors) ORDER BY rowid"
        )
    ]
    if not missing:
        return EmbedReport(0, round(time.monotonic() - started, 3))
    encoder = embeddings.shared_encoder()
    done = 0
    for start in range(0, len(missing), EMBED_CHUNK):
        chunk = missing[start : start + EMBED_CHUNK]
        marks = ",".join("?" * len(chunk))
        rows = conn.execute(f"SELECT rowid, prompt, reply FROM exchanges WHERE rowid IN ({marks})", chunk).fetchall()
        vectors = exchange_vectors(encoder, [(prompt, reply) for _, prompt, reply in rows])
        with conn:
            conn.executemany(
                "INSERT OR REPLACE INTO vectors(rowid, vector) VALUES (?, ?)",
                ((row[0], vector.tobytes()) for row, vector in zip(rows, vectors)),
            )
        done += len(rows)
        if progress:
            progress(done, len(missing))
    bump_generation(conn)
    return EmbedReport(done, round(time.monotonic() - started, 3))


def nearest(
    conn: sqlite3.Connection, topic: str, floor: float, limit: int, deadline: float | None = None,
    standard_floor: float = 0.0,
) -> list[tuple[int, float]]:
    """Exchanges whose similarity to ``topic`` (mean cosine, see above) is at least ``floor``, best first.

    Empty when the model is not installed, the index holds no vectors, or the vectors'
    search is not done by ``deadline`` (lexical search then works alone;
    :func:`pao_embeddings.similar.nearest`).
    """
    return nearest_soon(conn, topic, floor, limit, deadline, standard_floor)()


def nearest_soon(
    conn: sqlite3.Connection, topic: str, floor: float, limit: int, deadline: float | None = None,
    standard_floor: float = 0.0,
) -> Callable[[], list[tuple[int, float]]]:
    """:func:`nearest` in two steps (:func:`pao_embeddings.similar.nearest_soon`): the search may run meanwhile."""
    if not topic.strip() or limit <= 0 or not embeddings.available():
        return list
    if meta_value(conn, "vectors_recipe") != RECIPE:  # no vectors: the topic need not be embedded at all
        return list

    store = next(row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main")
    statement = "SELECT rowid, vector FROM vectors ORDER BY rowid"
    return similar.nearest_soon(
        store, meta_value(conn, "generation") or "", lambda: conn.execute(statement).fetchall(),
        topic, floor=floor, limit=limit, standard_floor=standard_floor, deadline=deadline, sql=statement if store else None,
    )
