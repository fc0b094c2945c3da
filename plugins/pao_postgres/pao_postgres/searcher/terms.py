"""From a natural-language topic to search terms (pure Python, dialect-neutral).

The database does the stemming and the matching; this module only decides which
words of a topic are worth looking for, so both dialects search for the same terms.
"""

from __future__ import annotations

from typing import Iterable

import attrs

from pao_core.words import FUNCTION_WORDS, STOP_WORDS, words

MAX_TERMS = 12
"""A 10,000-character topic still costs a bounded query: keep the first terms."""

MAX_NAME_WORDS = 4

@attrs.frozen
class Topic:
    """The searchable parts of one topic.

    ``terms``: distinct content words, in topic order (stop words dropped);
    ``words``: distinct words minus English function words (the original system's
    full-text terms); ``keywords``: its per-keyword fallback words;
    ``names``: lower-cased word n-grams that may be an entity's exact name.
    """

    text: str
    terms: tuple[str, ...]
    words: tuple[str, ...]
    keywords: tuple[str, ...]
    names: tuple[str, ...]


def clean(query: str) -> str:
    """The topic with NUL and other control characters replaced by spaces."""
    return "".join(" " if (ord(ch) < 32 or ord(ch) == 127) else ch for ch in query).strip()


def _is_term(word: str) -> bool:
    lowered = word.lower()
    if lowered in STOP_WORDS:
        return False
    return len(lowered) >= 2


def analyse(query: str) -> Topic:
    """Split a topic into terms, fallback keywords and candidate entity names."""
    text = clean(query)
    found = words(text)
    terms: list[str] = []
    for word in found:
        lowered = word.lower()
        if _is_term(word) and lowered not in terms:
            terms.append(lowered)
    plain = _distinct(w for w in found if len(w) >= 2 and w.lower() not in FUNCTION_WORDS)
    keywords = _distinct(w for w in found if len(w) >= 3)
    names: list[str] = []
    for size in range(1, MAX_NAME_WORDS + 1):
        for start in range(0, len(found) - size + 1):
            gram = " ".join(found[start : start + size]).lower()
            if (size > 1 or _is_term(gram)) and gram not in names:
                names.append(gram)
    return Topic(
        text, tuple(terms[:MAX_TERMS]), tuple(plain[:MAX_TERMS]), tuple(keywords[:MAX_TERMS]), tuple(names[: 4 * MAX_TERMS])
    )


def _distinct(found: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(word.lower() for word in found))


def like_pattern(keyword: str) -> str:
    """``%keyword%`` with LIKE's wildcards and the escape character escaped (ESCAPE '\\')."""
    escaped = keyword.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def fts5_phrase(term: str) -> str:
    """One FTS5 string (a phrase of the term's tokens), double quotes doubled."""
    return '"' + term.replace('"', '""') + '"'
