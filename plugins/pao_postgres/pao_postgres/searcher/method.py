"""How each search mode searches: a :class:`Method` per mode (:data:`METHODS`), and the per-term
:class:`Weights` of one topic in one store (:mod:`pao_postgres.searcher.retrieval` runs them)."""

from __future__ import annotations

import attrs

from pao_embeddings.hybrid import VectorSettings


@attrs.frozen
class Method(VectorSettings):
    """How one mode searches.

    ``coverage``: rank first by the share of the topic an observation covers, each
    term weighted by its rarity, ``ln(1 + N / (df + 1))`` (``idf``; else every term
    weighs 1). A term found nowhere in the store weighs most: an unrelated topic is
    mostly such terms, so its best match covers little of it. ``floor``: the share
    an observation must cover to be returned; ``min_matches``: and at least this many
    distinct terms (fewer when the topic has fewer; naming the entity exactly counts
    as one). ``name_bonus``: weight added, in units of the mean term weight, when the
    topic names the observation's entity. ``relative``: also drop what covers less
    than this share of the best observation's coverage. ``pool``: how many
    natively ranked candidates are scored for coverage.
    ``vectors``: also rank the observations by cosine similarity to the topic (those
    above ``vector_floor``, at most ``vector_candidates``; :mod:`pao_postgres.searcher.vectors`)
    and fuse the two rankings by ``1 / (rrf_k + rank)`` (:mod:`pao_embeddings.hybrid`). ``entity_siblings``: after the
    hits, the other observations of the hits' entities (an entity is usually one subject,
    and its other facts rarely repeat the topic's words), best entity first: of every
    hit's entity (``all``), of the entities with two hits or one both rankings found
    (``confirmed``: one stray hit does not bring its whole entity), or none (``none``);
    ``related_entities``: then those of the entities related to them (either direction).
    """

    any_term: bool = True
    coverage: bool = True
    idf: bool = True
    entity_names: bool = True
    floor: float = 0.0
    min_matches: int = 0
    name_bonus: float = 1.0
    relative: float = 0.0
    df_cap: int = 1000
    pool: int = 200
    vectors: bool = False
    entity_siblings: str = "none"
    related_entities: bool = False

    def required(self, term_count: int) -> int:
        return min(self.min_matches, term_count) if self.coverage else 0


METHODS: dict[str, Method | None] = {
    "original": None,
    # the vector floor: a cosine of this model and recipe, which separates the two corpora's
    # near-miss controls from their topics better than any per-query or per-store rescaling;
    # fitted on each labelled corpus and reported on the other (benches/retrieval_fit.py)
    "ranked": Method(floor=0.35, min_matches=2, vectors=True, vector_floor=0.50, entity_siblings="all",
                     related_entities=True),
}


@attrs.frozen
class Weights:
    """Per-term weights of one topic in one store."""

    terms: tuple[float, ...]
    name_bonus: float
    common: tuple[bool, ...] = ()

    def candidate_terms(self, terms: tuple[str, ...]) -> tuple[str, ...]:
        """The terms that fetch candidates: all but those too common to say anything
        (a term in ``df_cap`` observations or more, like a stop word)."""
        flags = self.common or (False,) * len(terms)
        return tuple(term for term, common in zip(terms, flags) if not common)

    @property
    def total(self) -> float:
        return sum(self.terms)
