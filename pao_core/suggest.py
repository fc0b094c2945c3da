""""Did you mean": the closest of the known words to a mistyped one (difflib), for one-line errors."""

from __future__ import annotations

from typing import Iterable


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """``"; did you mean 'list'?"`` (or two: ``'a' or 'b'``) when a known word is close to ``word``, else ``""``."""
    import difflib  # only a mistake needs it

    close = difflib.get_close_matches(word, sorted(set(known)), n=2, cutoff=0.6)
    if not close:
        return ""
    return "; did you mean " + " or ".join(repr(choice) for choice in close) + "?"
