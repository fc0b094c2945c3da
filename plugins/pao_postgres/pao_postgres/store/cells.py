"""Training the vector cells of a large store, and filling them as vectors are written
(SQLAlchemy connections of :func:`pao_postgres.store.vectors.refresh_vectors`); what the cells
are and how a search reads them: :mod:`pao_postgres.searcher.cells`."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Sequence

from pao_embeddings import model
from pao_postgres.searcher.cells import cell_count, matrix_of

if TYPE_CHECKING:
    import numpy as np
    import sqlalchemy as sa

CELLS_FROM = 20_000
"""Vectors from which a store is searched by cells (fewer: every vector is compared)."""
SAMPLE_PER_CELL = 32

ITERATIONS = 6

CHUNK = 8192
"""Vectors compared with the centroids at a time (bounded memory at any store size)."""


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


def codes_of(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """8-bit codes of unit vectors, each scaled to its largest component, and their float32 scales."""
    import numpy as np  # loads numpy on use: start-up stays light

    scales = (np.maximum(np.abs(matrix).max(axis=1), 1e-12) / 127).astype(np.float32)
    return np.clip(np.rint(matrix / scales[:, None]), -127, 127).astype(np.int8), scales


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
