"""What both backends do with vectors: rank stored ones against a topic, and say which
retrieval mode runs and why (for ``pao doctor`` and the stores' statistics)."""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, NamedTuple, Sequence

from pao_core.waiting import start
from pao_embeddings import ahead, model

if TYPE_CHECKING:
    import numpy as np


class Matrix(NamedTuple):
    """A store's vectors as one (rows x 384) float32 matrix, with each row's key (no attrs: see ``model.Encoder``)."""

    generation: str
    keys: np.ndarray
    matrix: np.ndarray


_matrices: dict[str, Matrix] = {}
_matrices_lock = threading.Lock()


def nearest(store: str, generation: str, read: Callable[[], Sequence[tuple[int, bytes]]], topic: str, *,
            floor: float, limit: int, standard_floor: float = 0.0, deadline: float | None,
            sql: str | None = None) -> list[tuple[int, float]]:
    """``(key, cosine)`` of a store's stored vectors nearest ``topic``, best first (see :func:`above_floor`).

    ``read`` returns the store's ``(key, float32 bytes)`` rows; it runs in the caller's
    thread (its database connection) and only when this process has no matrix of that
    ``generation`` of ``store`` yet. Everything numpy does (its import, the matrix, the
    topic's vector, the product) runs on a worker thread: when it is not done by
    ``deadline`` the answer is empty, and the caller's lexical hits go out alone and in
    time. A broken model raises :class:`model.EmbeddingsUnavailable`.

    ``sql``: the statement that reads the same rows from the SQLite file ``store``; with it,
    the helper process of :mod:`pao_embeddings.ahead`, when one runs, does all of this.
    """
    if sql is not None and deadline is not None:
        try:
            found = ahead.run(functools.partial(nearest_in_file, store, generation, sql, topic, floor=floor, limit=limit,
                                                standard_floor=standard_floor, deadline=deadline), deadline)
        except Exception:  # noqa: BLE001 - the file could not be read apart (say, a writer's lock): searched here
            found = ahead.NOT_SENT
        if found is not ahead.NOT_SENT:
            return found
    with _matrices_lock:
        cached = _matrices.get(store)
    if cached is not None and cached.generation != generation:
        cached = None
    stored = read() if cached is None else ()
    if cached is None and not stored:
        return []

    def search() -> list[tuple[int, float]]:
        loaded = cached or _build(store, generation, stored)
        query = model.shared_encoder().encode_one(topic)
        return above_floor(loaded.matrix, loaded.keys, query, floor, limit, standard_floor)

    found = model.run_before(search, deadline)
    return found or []


def nearest_soon(store: str, generation: str, read: Callable[[], Sequence[tuple[int, bytes]]], topic: str, *,
                 floor: float, limit: int, standard_floor: float = 0.0, deadline: float | None,
                 sql: str | None = None) -> Callable[[], list[tuple[int, float]]]:
    """:func:`nearest` in two steps: call this before the caller's lexical search, and what it returns after it,
    for the hits. With ``sql`` and the helper of :mod:`pao_embeddings.ahead` running, the helper searches
    meanwhile (sent from a thread that reads ``store`` on a connection of its own, should the helper be gone)."""
    if sql is None or deadline is None or not ahead.running():
        return functools.partial(nearest, store, generation, read, topic, floor=floor, limit=limit,
                                 standard_floor=standard_floor, deadline=deadline, sql=sql)
    outcome = start(functools.partial(nearest, store, generation, functools.partial(_read_file, store, sql), topic,
                                      floor=floor, limit=limit, standard_floor=standard_floor, deadline=deadline,
                                      sql=sql), name="pao-vectors")

    def hits() -> list[tuple[int, float]]:
        try:
            return outcome.result(timeout=max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            return []
        except Exception:  # noqa: BLE001 - searching apart failed: here with the caller's rows, as without a helper
            return nearest(store, generation, read, topic, floor=floor, limit=limit, standard_floor=standard_floor,
                           deadline=deadline)

    return hits


def nearest_in_file(store: str, generation: str, sql: str, topic: str, *, floor: float, limit: int,
                    standard_floor: float, deadline: float) -> list[tuple[int, float]]:
    """:func:`nearest`, reading the rows with ``sql`` from the SQLite file ``store`` on a connection of its own
    (in the helper, or here when it is gone); empty once ``deadline`` has passed."""
    if time.monotonic() >= deadline:
        return []
    return nearest(store, generation, functools.partial(_read_file, store, sql), topic, floor=floor, limit=limit,
                   standard_floor=standard_floor, deadline=deadline)


def _read_file(store: str, sql: str) -> list[tuple[int, bytes]]:
    import sqlite3  # reading a store's file here: the helper, or a thread of the caller's

    with contextlib.closing(sqlite3.connect(f"{Path(store).resolve().as_uri()}?mode=ro", uri=True)) as conn:
        return conn.execute(sql).fetchall()


def _build(store: str, generation: str, stored: Sequence[tuple[int, bytes]]) -> Matrix:
    import numpy as np  # loads numpy on use: start-up stays light

    keys = np.fromiter((row[0] for row in stored), dtype=np.int64, count=len(stored))
    matrix = np.frombuffer(b"".join(bytes(row[1]) for row in stored), dtype=np.float32).reshape(len(stored), model.DIMENSIONS)
    loaded = Matrix(generation, keys, matrix)
    with _matrices_lock:
        _matrices[store] = loaded
    return loaded


def above_floor(matrix: np.ndarray, keys: Sequence[int] | np.ndarray, query: np.ndarray, floor: float,
                limit: int, standard_floor: float = 0.0) -> list[tuple[int, float]]:
    """``(key, cosine)`` of the rows most similar to ``query``, best first.

    A row must reach the cosine ``floor`` and, when ``standard_floor`` is set, stand that
    many standard deviations above the mean similarity of all rows to this query: a topic
    the store knows has a few rows far above the rest, an unrelated one has a flat
    spread, whatever the corpus's vocabulary does to raw cosines.
    """
    import numpy as np  # loads numpy on use: start-up stays light

    similarity = matrix @ query
    least = floor
    if standard_floor > 0 and len(similarity) > 1:
        least = max(floor, float(similarity.mean() + standard_floor * similarity.std()))
    above = np.flatnonzero(similarity >= least)
    best = above[np.argsort(-similarity[above], kind="stable")][:limit]
    return [(int(keys[i]), float(similarity[i])) for i in best]


def retrieval_mode(*, enabled: bool, vectors: int, items: int, what: str, refresh: str) -> str:
    """``semantic + lexical`` or ``lexical only: <why>`` for a store of ``items`` with ``vectors``
    (``refresh``: the command that embeds what lacks a vector)."""
    if not enabled:
        return "lexical only: semantic = false in the config"
    missing = model.missing_modules()
    if missing:
        return f"lexical only: {', '.join(missing)} not installed ({model.INSTALL_HINT})"
    if items and not vectors:
        return f"lexical only: none of the {items} {what} has a vector yet ({refresh})"
    if items and vectors < items:
        return f"semantic + lexical for {vectors} of {items} {what} ({refresh} embeds the others)"
    try:
        model.check()
    except model.EmbeddingsUnavailable as exc:
        return f"lexical only: the model is broken ({exc})"
    return f"semantic + lexical ({model.MODEL_NAME})"
