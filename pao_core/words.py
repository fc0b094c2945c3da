"""Words of a topic or a memory, and the words that say nothing about either (one list for all).

Retrieval in every backend and pao's own fusion split text with :func:`words` and drop
:data:`FUNCTION_WORDS` (English function words, roughly what PostgreSQL's ``english``
configuration drops) and, for a topic, :data:`TASK_WORDS` (the verbs and fillers of a
request: they say what to do, not what it is about).
"""

from __future__ import annotations

import re

FUNCTION_WORDS = frozenset(
    """
    a about above after again against all also am an and any are aren't as at be because been before
    being below between both but by can can't cannot could couldn't did didn't do does doesn't doing
    don't down during each either else ever every few for from further get gets getting got had hadn't
    has hasn't have haven't having he her here hers herself him himself his how i if in into is isn't
    it it's its itself just let let's like lot lots many may me might mine more most much must my myself
    no nor not now of off on once one only or other ought our ours ourselves out over own per please
    quite rather really same she should shouldn't since so some still such than that that's the their
    theirs them themselves then there there's these they this those though through thus to too under
    until up upon us very via was wasn't we were weren't what what's when where which while who whom
    whose why will with within without won't would wouldn't yes yet you your yours yourself yourselves
    """.split()
)

TASK_WORDS = frozenset(
    """
    add adds added adding change changes changed check checks done fix fixes fixed fixing help keep keeps
    kept look looks looking make makes making need needs new sometimes stuff thing things try tries trying
    update updates updated updating use uses using want wants way ways work works working
    """.split()
)

STOP_WORDS = FUNCTION_WORDS | TASK_WORDS
"""What a topic's search terms leave out."""

_WORD = re.compile(r"[^\W_](?:[\w.+#'-]*[^\W_])?", re.UNICODE)
_POSSESSIVE = re.compile(r"['’]s$")


def words(text: str) -> list[str]:
    """``text``'s words in order, case kept, possessive ``'s`` stripped.

    A word keeps the punctuation inside it that technical names carry (``node.js``,
    ``2025-10-19``, ``don't``, ``C#.NET``), never at its ends.
    """
    return [_POSSESSIVE.sub("", match.group(0)) for match in _WORD.finditer(text)]

