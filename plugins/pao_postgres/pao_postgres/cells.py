"""Vector cells: the semantic search of a large store reads a few cells, not every vector.

Below :data:`CELLS_FROM` vectors a search compares the topic with every stored vector
(exact; :func:`pao_postgres.vectors.nearest`). From there on, the write that brings the
store there (:func:`pao_postgres.vectors.refresh_vectors`) groups the vectors into
about ``sqrt(N)`` cells: spherical k-means, trained on a sample and seeded by
k-means++. One row per cell (``<observations>_vectors_cells``) holds its centroid and,
packed, its vectors' ids and 8-bit codes (each vector scaled to its largest component:
384 bytes instead of 1,536), so a cell is one read, not a thousand scattered rows. A
vector written later is appended to its nearest centroid's cell; the cells are trained
again when the store has doubled or halved since. A search embeds the topic, compares
it with the centroids (read once per process and training), scores the codes of the
:data:`PROBES` nearest cells, and reads the exact vectors of the best few to rank them:
the inverted-file index of pgvector's ``ivfflat``, in plain tables of either dialect
(pgvector is not among Debian 12's packages). An id whose observation is gone or
changed since stays in its cell until the next training; the exact vectors decide.
"""

from __future__ import annotations

import math
import threading
import time
from typing import TYPE_CHECKING, Any, Sequence

from pao_embeddings import model, similar

if TYPE_CHECKING:
    import numpy as np
    import sqlalchemy as sa

    from pao_postgres.retrieval import Method
    from pao_postgres.sqlite_read import Rows

CELLS_FROM = 20_000
"""Vectors from which a store is searched by cells (fewer: every vector is compared)."""
PROBES = 8
"""Cells read per search: with ``sqrt(N)`` cells, about ``8 * sqrt(N)`` codes (8,000 of 1,000,000)."""
RERANK = 4
"""Exact vectors read per wanted hit: the best ``RERANK * vector_candidates`` by their codes."""
CODE_MARGIN = 0.05
"""How far below the floor a code's score may be and its exact vector still read (8-bit rounding)."""
SAMPLE_PER_CELL = 32
ITERATIONS = 6
CHUNK = 8192
"""Vectors compared with the centroids at a time (bounded memory at any store size)."""


def cell_count(vectors: int) -> int:
    return max(1, round(math.sqrt(vectors)))


def assign(vectors: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Each (unit) vector's nearest centroid by cosine."""
    import numpy as np  # loads numpy on use: start-up stays light

    out = np.empty(len(vectors), dtype=np.int32)
    for start in range(0, len(vectors), CHUNK):
        out[start : start + CHUNK] = np.argmax(vectors[start : start + CHUNK] @ centroids.T, axis=1)
    return out


def train(sample: np.ndarray, cells: int, seed: int = 0) -> np.ndarray:
    """``cells`` unit centroids of ``sample`` (spherical k-means seeded by k-means++; an empty
    cell keeps its seed)."""
    import numpy as np  # loads numpy on use: start-up stays light

    rng = np.random.default_rng(seed)
    chosen = [int(rng.integers(len(sample)))]
    nearest = sample @ sample[chosen[0]]
    for _ in range(1, min(cells, len(sample))):
        # the next seed is far from the seeds so far: drawn with weight 1 - cosine to its nearest seed
        weights = np.maximum(1.0 - nearest, 0.0)
        total = float(weights.sum())
        pick = int(rng.choice(len(sample), p=weights / total)) if total > 0 else int(rng.integers(len(sample)))
        chosen.append(pick)
        np.maximum(nearest, sample @ sample[pick], out=nearest)
    centroids = sample[chosen].astype(np.float32)
    for _ in range(ITERATIONS):
        assigned = assign(sample, centroids)
        order = np.argsort(assigned, kind="stable")
        counts = np.bincount(assigned, minlength=len(centroids))
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        filled = counts > 0
        centroids[filled] = np.add.reduceat(sample[order], starts[filled], axis=0)
        centroids /= np.maximum(np.linalg.norm(centroids, axis=1, keepdims=True), 1e-12)
    return centroids


def matrix_of(blobs: Sequence[bytes]) -> np.ndarray:
    import numpy as np  # loads numpy on use: start-up stays light

    return np.frombuffer(b"".join(bytes(blob) for blob in blobs), dtype=np.float32).reshape(len(blobs), model.DIMENSIONS)


def codes_of(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """8-bit codes of unit vectors, each scaled to its largest component, and their float32 scales."""
    import numpy as np  # loads numpy on use: start-up stays light

    scales = (np.maximum(np.abs(matrix).max(axis=1), 1e-12) / 127).astype(np.float32)
    return np.clip(np.rint(matrix / scales[:, None]), -127, 127).astype(np.int8), scales


# -- writing (SQLAlchemy connections of pao_postgres.vectors.refresh_vectors) ---------------------


def create(connection: sa.Connection, names: dict[str, str], sqlite: bool) -> None:
    """The cell table (idempotent)."""
    blob = "BLOB" if sqlite else "bytea"
    connection.exec_driver_sql(
        f"CREATE TABLE IF NOT EXISTS {names['cells']} (cell INTEGER PRIMARY KEY, centroid {blob} NOT NULL, "
        f"ids {blob} NOT NULL, codes {blob} NOT NULL, scales {blob} NOT NULL)"
    )


def stored_centroids(connection: sa.Connection, names: dict[str, str], meta: dict[str, str]) -> np.ndarray | None:
    """The trained centroids (None while the store is searched without cells)."""
    if "cells" not in meta:
        return None
    found = connection.exec_driver_sql(f"SELECT centroid FROM {names['cells']} ORDER BY cell").fetchall()
    return matrix_of([row[0] for row in found]) if found else None


def due(meta: dict[str, str], count: int) -> bool:
    """Whether the cells are to be trained (again), or dropped (a store shrunk below :data:`CELLS_FROM`)."""
    if count < CELLS_FROM:
        return "cells" in meta
    trained = int(meta.get("cells_trained", 0))
    return "cells" not in meta or count >= 2 * trained or 2 * count <= trained


def retrain(connection: sa.Connection, names: dict[str, str], count: int, sqlite: bool) -> dict[str, str]:
    """Train the cells of the store's ``count`` vectors and fill them; the meta keys to set
    (empty, and the cells dropped, below :data:`CELLS_FROM`)."""
    connection.exec_driver_sql(f"DELETE FROM {names['cells']}")
    if count < CELLS_FROM:
        return {}
    sample = connection.exec_driver_sql(
        f"SELECT vector FROM {names['vectors']} ORDER BY random() LIMIT {int(cell_count(count) * SAMPLE_PER_CELL)}"
    ).fetchall()
    centroids = train(matrix_of([row[0] for row in sample]), cell_count(count))
    result = connection.exec_driver_sql(f"SELECT observation_id, vector FROM {names['vectors']}",
                                        execution_options={"stream_results": True})
    parts = []
    for part in result.partitions(CHUNK):
        matrix = matrix_of([row[1] for row in part])
        parts.append(([row[0] for row in part], assign(matrix, centroids), *codes_of(matrix)))
    write_cells(connection, names, centroids, parts, sqlite)
    return {"cells": str(time.time_ns()), "cells_trained": str(count)}


def write_cells(connection: Any, names: dict[str, str], centroids: np.ndarray,
                parts: Sequence[tuple[Sequence[int], np.ndarray, np.ndarray, np.ndarray]], sqlite: bool) -> None:
    """Fill the cell table: each cell's centroid, ids, codes and scales, from ``parts`` of
    ``(ids, cells, codes, scales)`` (:func:`assign`, :func:`codes_of`)."""
    import numpy as np  # loads numpy on use: start-up stays light

    ids = np.concatenate([np.asarray(part[0], dtype=np.int64) for part in parts]) if parts else np.zeros(0, np.int64)
    tags = np.concatenate([part[1] for part in parts]) if parts else np.zeros(0, np.int32)
    codes = np.concatenate([part[2] for part in parts]) if parts else np.zeros((0, model.DIMENSIONS), np.int8)
    scales = np.concatenate([part[3] for part in parts]) if parts else np.zeros(0, np.float32)
    order = np.argsort(tags, kind="stable")
    bounds = np.searchsorted(tags[order], np.arange(len(centroids) + 1))
    mark = "?" if sqlite else "%s"
    for cell, centroid in enumerate(centroids):
        chosen = order[bounds[cell] : bounds[cell + 1]]
        connection.exec_driver_sql(
            f"INSERT INTO {names['cells']} (cell, centroid, ids, codes, scales) VALUES ({mark}, {mark}, {mark}, {mark}, {mark})",
            (cell, centroid.tobytes(), ids[chosen].tobytes(), codes[chosen].tobytes(), scales[chosen].tobytes()),
        )


def append(connection: sa.Connection, names: dict[str, str], centroids: np.ndarray, ids: Sequence[int],
           matrix: np.ndarray, sqlite: bool) -> None:
    """Add newly written vectors to their nearest centroids' cells."""
    import numpy as np  # loads numpy on use: start-up stays light

    tags = assign(matrix, centroids)
    keys = np.asarray(ids, dtype=np.int64)
    codes, scales = codes_of(matrix)
    for cell in np.unique(tags):
        chosen = tags == cell
        if sqlite:  # SQLite's || makes text of blobs: read, join, write
            row = connection.exec_driver_sql(f"SELECT ids, codes, scales FROM {names['cells']} WHERE cell = ?",
                                             (int(cell),)).one()
            connection.exec_driver_sql(f"UPDATE {names['cells']} SET ids = ?, codes = ?, scales = ? WHERE cell = ?",
                                       (row[0] + keys[chosen].tobytes(), row[1] + codes[chosen].tobytes(),
                                        row[2] + scales[chosen].tobytes(), int(cell)))
        else:
            connection.exec_driver_sql(
                f"UPDATE {names['cells']} SET ids = ids || %s, codes = codes || %s, scales = scales || %s WHERE cell = %s",
                (keys[chosen].tobytes(), codes[chosen].tobytes(), scales[chosen].tobytes(), int(cell)),
            )


# -- searching --------------------------------------------------------------------------------


_centroids: dict[str, tuple[str, np.ndarray]] = {}
_centroids_lock = threading.Lock()


def nearest_in_cells(key: str, rows: Rows, names: dict[str, str], generation: str, topic: str, method: Method,
                     deadline: float) -> list[tuple[int, float]]:
    """``(observation id, cosine)`` above the method's floor among the vectors of the cells
    nearest ``topic``, best first; empty when the topic's vector is not ready by ``deadline``."""
    query = model.encode_topic(topic, deadline)  # first: it loads numpy with one BLAS thread
    if query is None:
        return []
    import numpy as np  # loaded by the topic's vector
    with _centroids_lock:
        cached = _centroids.get(key)
    if cached is None or cached[0] != generation:
        cached = (generation, matrix_of([row[0] for row in rows(f"SELECT centroid FROM {names['cells']} ORDER BY cell", {})]))
        with _centroids_lock:
            _centroids[key] = cached
    centroids = cached[1]
    if not len(centroids):
        return []
    probed = np.argsort(-(centroids @ query), kind="stable")[:PROBES]
    marks = ", ".join(f":c{n}" for n in range(len(probed)))
    cells = rows(f"SELECT ids, codes, scales FROM {names['cells']} WHERE cell IN ({marks})",
                 {f"c{n}": int(cell) for n, cell in enumerate(probed)})
    keys = np.frombuffer(b"".join(bytes(row[0]) for row in cells), dtype=np.int64)
    if not len(keys):
        return []
    codes = np.frombuffer(b"".join(bytes(row[1]) for row in cells), dtype=np.int8).reshape(len(keys), model.DIMENSIONS)
    scales = np.frombuffer(b"".join(bytes(row[2]) for row in cells), dtype=np.float32)
    scores = (codes.astype(np.float32) @ query) * scales
    likely = np.flatnonzero(scores >= method.vector_floor - CODE_MARGIN)
    best = np.unique(keys[likely[np.argsort(-scores[likely], kind="stable")][: RERANK * method.vector_candidates]])
    if not len(best):
        return []
    marks = ", ".join(f":k{n}" for n in range(len(best)))
    exact = rows(f"SELECT observation_id, vector FROM {names['vectors']} WHERE observation_id IN ({marks})",
                 {f"k{n}": int(k) for n, k in enumerate(best)})
    if not exact:
        return []
    found = np.fromiter((row[0] for row in exact), dtype=np.int64, count=len(exact))
    return similar.above_floor(matrix_of([row[1] for row in exact]), found, query, method.vector_floor,
                               method.vector_candidates)
