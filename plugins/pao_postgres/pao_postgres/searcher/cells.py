"""Vector cells: the semantic search of a large store reads a few cells, not every vector.

Below :data:`pao_postgres.store.cells.CELLS_FROM` vectors a search compares the topic with every stored vector
(exact; :func:`pao_postgres.searcher.vectors.nearest`). From there on, the write that brings the
store there (:func:`pao_postgres.store.vectors.refresh_vectors`, training in :mod:`pao_postgres.store.cells`) groups the vectors into
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

from __future__ import annotations

import math
import threading
from typing import TYPE_CHECKING, Sequence

from pao_embeddings import model, similar

if TYPE_CHECKING:
    import numpy as np

    from pao_postgres.searcher.method import Method
    from pao_postgres.searcher.reading import Rows


PROBES = 8
"""Cells read per search: with ``sqrt(N)`` cells, about ``8 * sqrt(N)`` codes (8,000 of 1,000,000)."""

RERANK = 4
"""Exact vectors read per wanted hit: the best ``RERANK * vector_candidates`` by their codes."""

CODE_MARGIN = 0.05
"""How far below the floor a code's score may be and its exact vector still read (8-bit rounding)."""


def cell_count(vectors: int) -> int:
    return max(1, round(math.sqrt(vectors)))


def matrix_of(blobs: Sequence[bytes]) -> np.ndarray:
    import numpy as np  # loads numpy on use: start-up stays light

    return np.frombuffer(b"".join(bytes(blob) for blob in blobs), dtype=np.float32).reshape(len(blobs), model.DIMENSIONS)


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
