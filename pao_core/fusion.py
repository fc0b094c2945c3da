"""Step 3a: one ranked list from every backend's answer.

* Reciprocal-rank fusion: an item's fused score is ``sum(1 / (k + rank))`` over the
  backends that returned it. Native scores are never compared across engines; they
  are only used, per backend, by that backend's relevance floor.
* Relevance floors: ``floors[backend]`` is a minimum native score for that backend;
  ``relative_floor`` drops items scoring below that fraction of the backend's best.
* Near-duplicates (the same fact in other words, maybe under another entity) keep
  the better-ranked item, which lists the others in ``fusion["duplicates"]``.
* Supersession: dated items about the same subject are ordered newest first; the
  older one is marked ``fusion["earlier"] = True`` and names its successor.
* Tiers: agents' facts (``remember``) come after the user's, at most ``agent_items`` of them,
  and never hide (as a near-duplicate) or supersede one of the user's.
* The budget is applied on the rendered briefing by :func:`fit_budget`.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

import attrs

from pao_core.models import BackendResult, MemoryItem, by_agent
from pao_core.words import FUNCTION_WORDS, words

if TYPE_CHECKING:
    from pao_core.config import BriefingOptions

_ISO_DATE = re.compile(r"(?<![\d-])((?:19|20)\d\d)-(0[1-9]|1[0-2])(?:-(0[1-9]|[12]\d|3[01]))?(?![\d-])")
_MONTHS = {m: i for i, m in enumerate("january february march april may june july august september october "
                                      "november december".split(), start=1)}
_MONTH_DATE = re.compile(r"\b(" + "|".join(_MONTHS) + r")\s+((?:19|20)\d\d)\b", re.IGNORECASE)


@functools.lru_cache(maxsize=8192)
def tokens(text: str) -> frozenset[str]:
    """Content words of ``text``: lower-cased, function words dropped, plural ``s`` folded."""
    found = set()
    for word in words(text.lower()):
        if word in FUNCTION_WORDS:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss") and word.isalpha():
            word = word[:-1]
        found.add(word)
    return frozenset(found)


LEADING_CHARS = 24
"""A date this close to the start says when the item became true ("2025-10-19: ...",
"Since 2025-12-20 ...", "In June 2025 ..."); later ones are what it is about."""


def text_date(text: str, *, leading: bool = False) -> dt.date | None:
    """The first date an item's text states (``leading``: only one near its start)."""
    head = text[:LEADING_CHARS] if leading else text
    iso = _ISO_DATE.search(head)
    month = _MONTH_DATE.search(head)
    candidates = []
    if iso:
        candidates.append((iso.start(), dt.date(int(iso[1]), int(iso[2]), int(iso[3] or 1))))
    if month:
        candidates.append((month.start(), dt.date(int(month[2]), _MONTHS[month[1].lower()], 1)))
    return min(candidates)[1] if candidates else None


def apply_floors(results: Mapping[str, BackendResult], options: BriefingOptions) -> dict[str, list[MemoryItem]]:
    """Each answering backend's items that pass its floors, in the backend's order."""
    kept: dict[str, list[MemoryItem]] = {}
    for name, result in results.items():
        if result.status != "ok" or not result.items:
            continue
        items = sorted(result.items, key=lambda item: item.rank)
        floor = options.floors.get(name)
        if floor is not None:
            items = [item for item in items if item.score >= floor]
        if items and options.relative_floor > 0:
            best = max(item.score for item in items)
            if best > 0:
                items = [item for item in items if item.score >= options.relative_floor * best]
        if items:
            kept[name] = items
    return kept


def reciprocal_rank(per_backend: Mapping[str, Sequence[MemoryItem]], k: int) -> list[MemoryItem]:
    """Items ordered by reciprocal-rank fusion of their per-backend positions."""
    scores: dict[tuple[str, str], float] = {}
    first: dict[tuple[str, str], MemoryItem] = {}
    for items in per_backend.values():
        for position, item in enumerate(items, start=1):
            key = (item.backend, item.id)
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + position)
            first.setdefault(key, item)
    order = sorted(scores, key=lambda key: (-scores[key], first[key].backend, first[key].id))
    return [attrs.evolve(first[key], fusion={**first[key].fusion, "fused_score": round(scores[key], 6)}) for key in order]


MIN_SHARED = 4
"""Fewer shared words than this is too little evidence of a duplicate."""


def _similarity(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


@functools.lru_cache(maxsize=4096)  # an item is compared with every kept one: its numbers are found once
def _numbers(words: frozenset[str]) -> frozenset[str]:
    return frozenset(word for word in words if any(ch.isdigit() for ch in word))


def is_near_duplicate(a: MemoryItem, b: MemoryItem, threshold: float) -> bool:
    """Same fact twice: most words shared (and at least ``MIN_SHARED``), and no number
    that one states and the other lacks.

    Two dated items with different dates are not duplicates but a change over time.
    """
    wa, wb = tokens(a.text), tokens(b.text)
    if min(len(wa), len(wb)) < threshold * max(len(wa), len(wb)):
        return False  # Jaccard is at most the ratio of the sizes
    if len(wa & wb) < MIN_SHARED or _similarity(wa, wb) < threshold:
        return False
    if _numbers(wa) ^ _numbers(wb):
        return False
    da, db = text_date(a.text), text_date(b.text)
    return not (da and db and da != db)


def drop_near_duplicates(items: Sequence[MemoryItem], threshold: float) -> list[MemoryItem]:
    """Keep the first of each group of near-duplicates; it lists the dropped ids."""
    kept: list[MemoryItem] = []
    for item in items:
        twin = next((i for i, other in enumerate(kept) if is_near_duplicate(item, other, threshold)), None)
        if twin is None:
            kept.append(item)
            continue
        other = kept[twin]
        dropped = [*other.fusion.get("duplicates", ()), item.id]
        kept[twin] = attrs.evolve(other, fusion={**other.fusion, "duplicates": dropped})
    return kept


def _subject(item: MemoryItem) -> str:
    return f"{item.kind}\0{item.title}\0{by_agent(item)}"  # within a tier: an agent's never supersedes the user's


def _stated_date(item: MemoryItem) -> dt.date | None:
    """The date the text starts with; for an agent's fact, when pao stored it (its text may say anything)."""
    if by_agent(item):
        return item.timestamp.date() if item.timestamp else None
    return text_date(item.text, leading=True)


def _with_parts(words: frozenset[str]) -> frozenset[str]:
    """Words and the parts of compound ones ("actions/cache@v3" and "rust-cache@v2" share "cache")."""
    return words | {part for word in words for part in re.split(r"[/@.-]", word) if len(part) > 2 and not part.isdigit()}


def order_superseded(items: Sequence[MemoryItem]) -> list[MemoryItem]:
    """Newest first within each subject that has dated, overlapping items; older ones marked.

    A subject is an item's kind and title (an entity). Only dates the items state at
    the start of their text count: a store's own timestamps say when something was
    written down (an import, a conversation turn), and a date later in the text is
    what the fact is about (a deadline), not when it became true. Two dated items of
    one subject that share a content word beyond the subject's name are about the
    same thing; the newer takes the better of their places and the older is marked
    ``earlier`` with ``superseded_by``.
    """
    result = list(items)
    groups: dict[str, list[int]] = {}
    for index, item in enumerate(result):
        groups.setdefault(_subject(item), []).append(index)
    for indexes in groups.values():
        dated = [(_stated_date(result[i]), i) for i in indexes]
        dated = [(date, i) for date, i in dated if date is not None]
        if len(dated) < 2:
            continue
        name_words = _with_parts(tokens(result[dated[0][1]].title))
        words = {i: _with_parts(tokens(result[i].text)) - name_words for _, i in dated}
        related = [(date, i) for date, i in dated
                   if any(words[i] & words[j] for _, j in dated if j != i)]
        if len(related) < 2:
            continue
        slots = sorted(i for _, i in related)
        newest_first = sorted(related, key=lambda pair: (pair[0], result[pair[1]].meta.get("position", 0)),
                              reverse=True)
        originals = {i: result[i] for _, i in related}
        newest = originals[newest_first[0][1]]
        for slot, (date, i) in zip(slots, newest_first):
            item = originals[i]
            if item is not newest and date < newest_first[0][0]:
                item = attrs.evolve(item, fusion={**item.fusion, "earlier": True, "superseded_by": newest.id,
                                                "superseded_on": newest_first[0][0].isoformat()})
            result[slot] = item
    return result


def fuse(results: Mapping[str, BackendResult], options: BriefingOptions) -> tuple[MemoryItem, ...]:
    """Floors, rank fusion, near-duplicate removal, supersession and the item cap, as ``[briefing]`` sets them."""
    ranked = by_tier(reciprocal_rank(apply_floors(results, options), options.rrf_k))
    unique = drop_near_duplicates(ranked, options.duplicate_similarity)
    return tuple(by_tier(order_superseded(unique), options.agent_items)[: options.max_items])


def by_tier(items: Sequence[MemoryItem], agent_items: int | None = None) -> list[MemoryItem]:
    """The user's items, then the best ``agent_items`` (default all) of the agents': never above the user's."""
    return [item for item in items if not by_agent(item)] + [item for item in items if by_agent(item)][:agent_items]


def fit_budget(items: Sequence[MemoryItem], render: Callable[[Sequence[MemoryItem]], str], budget: int) -> int:
    """The largest ``n`` such that ``render(items[:n])`` fits in ``budget`` characters.

    Rendered length grows with ``n`` (each item adds lines), so a binary search finds it.
    Returns 0 when even the empty briefing does not fit (the caller truncates it).
    """
    low, high = 0, len(items)
    if len(render(items)) <= budget:
        return high
    while low < high:
        middle = (low + high + 1) // 2
        if len(render(items[:middle])) <= budget:
            low = middle
        else:
            high = middle - 1
    return low
