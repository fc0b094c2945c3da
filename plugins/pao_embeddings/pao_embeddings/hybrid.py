"""Lexical and vector retrieval fused by rank: the one implementation both stores use (the
longterm store, :mod:`pao_postgres.searcher.retrieval`, and the conversation history,
:mod:`pao_historyworker.search`).

The vector search starts first, so that it runs while the lexical one does (the topic's
vector in this process, or the helper of a new ``pao brief`` reading the store's file);
then the lexical ranking; then the two are fused by rank (reciprocal rank fusion, as the briefing
fuses the backends' answers in :mod:`pao_core.fusion`, so neither score scale dominates). A broken model costs the vectors, never the lexical hits.
"""

from __future__ import annotations

from typing import Callable, Sequence

import attrs


Ranking = Sequence[tuple[int, float]]
"""``(key, score)`` pairs, best first."""
VectorSearch = Callable[[], Callable[[], Ranking]]
"""Starts the vector search and returns what gives its hits (the two steps of
:func:`pao_embeddings.similar.nearest_soon`)."""


@attrs.frozen
class VectorSettings:
    """The vector side of a store's search (both stores' knobs inherit these): the cosine similarity to the topic a
    hit needs (all-MiniLM-L6-v2), ``vector_standard_floor`` for the hits of the standard model, at most
    ``vector_candidates`` of them, fused with the lexical hits by ``1 / (rrf_k + rank)``."""

    vector_floor: float = 0.45
    vector_standard_floor: float = 0.0
    vector_candidates: int = 10
    rrf_k: int = 60


@attrs.frozen
class Fused:
    """The fused ranking (the lexical one alone when the vectors found nothing), and its two parts."""

    hits: list[tuple[int, float]]
    lexical: list[tuple[int, float]]
    vectors: list[tuple[int, float]]

    def found_by_both(self) -> set[int]:
        return {key for key, _ in self.lexical} & {key for key, _ in self.vectors}


def lexical_and_vectors(lexical: Callable[[], Ranking], vectors: VectorSearch | None, k: int) -> Fused:
    """Both rankings of one topic fused by ``1 / (k + rank)``: ``vectors`` started first (None: no
    vector search), then ``lexical`` run, then the vector hits collected."""
    if vectors is None:
        found = list(lexical())
        return Fused(found, found, [])
    from pao_embeddings.model import EmbeddingsUnavailable  # the model's module: only with a vector search

    try:
        collect = vectors()
    except EmbeddingsUnavailable:
        collect = list
    found = list(lexical())
    try:
        near = list(collect())
    except EmbeddingsUnavailable:
        near = []  # a broken model install costs the vectors, not the lexical hits (`pao doctor` says why)
    if not near:
        return Fused(found, found, [])
    fused: dict[int, float] = {}
    for ranking in (found, near):
        for rank, (key, _) in enumerate(ranking, start=1):
            fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank)
    return Fused(sorted(fused.items(), key=lambda row: -row[1]), found, near)
