"""From a natural-language topic to search terms (pure Python, dialect-neutral).

The database does the stemming and the matching; this module only decides which
words of a topic are worth looking for, so both dialects search for the same terms.
"""

from __future__ import annotations

import re
from typing import Iterable

import attrs

MAX_TERMS = 12
"""A 10,000-character topic still costs a bounded query: keep the first terms."""

MAX_NAME_WORDS = 4

# Function words of English (roughly what PostgreSQL's english configuration drops).
ENGLISH_STOP_WORDS = frozenset(
    """
    a about above after again against all also am an and any are aren't as at be because been before
    being below between both but by can can't cannot could couldn't did didn't do does doesn't doing
    don't down during each either else ever every few for from further get gets getting got had hadn't
    has hasn't have haven't having he her here hers herself him himself his how i if in into is isn't
    it it's its itself just let let's like lot lots many may me might more most much must my myself
    no nor not now of off on once one only or other ought our ours ourselves out over own per please
    quite rather really same she should shouldn't so some such than that that's the their theirs them
    themselves then there there's these they this those though through thus to too under until up upon
    us very via was wasn't we were weren't what what's when where which while who whom whose why will
    with within without won't would wouldn't yet you your yours yourself yourselves
    """.split()
)

# The verbs and fillers of a task request ("fix", "please", "keeps"): they say what
# to do, not what it is about.
TASK_WORDS = frozenset(
    """
    add adds added adding change changes changed check checks fix fixes fixed fixing help keep keeps
    kept look looks looking make makes making need needs new sometimes thing things try tries trying
    update updates updated updating use uses using want wants way ways work works
    """.split()
)

STOP_WORDS = ENGLISH_STOP_WORDS | TASK_WORDS

_WORD = re.compile(r"[^\W_](?:[\w.+#'-]*[^\W_])?", re.UNICODE)
_POSSESSIVE = re.compile(r"['’]s$")


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


def words(text: str) -> list[str]:
    """The topic's words, possessives stripped, case kept."""
    return [_POSSESSIVE.sub("", match.group(0)) for match in _WORD.finditer(text)]


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
    plain = _distinct(w for w in found if len(w) >= 2 and w.lower() not in ENGLISH_STOP_WORDS)
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
