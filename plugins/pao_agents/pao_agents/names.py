"""Step 1 of a spawn: find the folder in the topic, name the agent, validate.

Nothing here writes a file or starts a process; every check that can fail runs
before the spawn does either.
"""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path
from typing import Iterable

import attrs

from pao_core.errors import ValidationError
from pao_core.topic import reject_control, shown

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")

# A path written in the topic: ~, ~/x, ./x, ../x or /x, ending at whitespace.
_PATH_TOKEN = re.compile(r"^(?:~(?:/.*)?|\.{1,2}/.*|/.+)$")
_TRAILING_PUNCTUATION = ".,;:!?)]}'\""
_WORD = re.compile(r"""(?<!\S)"[^"]+"[.,;:!?)]*(?!\S)|(?<!\S)'[^']+'[.,;:!?)]*(?!\S)|\S+""")
_PREPOSITIONS = {"in", "at", "under", "inside", "within", "for", "from", "on", "into"}


@attrs.frozen
class TopicFolder:
    """The topic without the folder phrase, and the folder found in it (if any)."""

    topic: str
    folder: str | None


def _is_dir(path: Path, token: str) -> bool:
    try:
        return path.is_dir()
    except OSError as exc:  # ENAMETOOLONG and kin: no such folder can exist
        raise ValidationError(f"folder {shown(token)}: {exc.strerror}") from None


def _exists(path: Path, token: str) -> bool:
    try:
        return path.exists()
    except OSError as exc:
        raise ValidationError(f"folder {shown(token)}: {exc.strerror}") from None


def split_topic(topic: str, *, cwd: str | None = None) -> TopicFolder:
    """Find a folder written inside ``topic`` and return the topic without it.

    ``fix the login bug in ~/code/api`` gives ``~/code/api`` and ``fix the login bug``.
    Words starting with ``~``, ``./`` or ``../`` are meant as folders and must exist;
    an absolute ``/x/y`` counts only when it is an existing folder (it may be a URL
    path). Several different folders are ambiguous: the user passes ``--folder``.
    """
    words = _words(topic)
    found: list[tuple[int, str]] = []
    for index, word in enumerate(words):
        token = _unquote(word.rstrip(",;:!?)") if word[:1] in "\"'" else word)
        token = token if token.endswith("/") else token.rstrip(_TRAILING_PUNCTUATION)
        if not _PATH_TOKEN.match(token):
            continue
        resolved = _expand(token, cwd)
        if _is_dir(resolved, token):
            found.append((index, token))
        elif not token.startswith("/") and not _exists(resolved, token):
            raise ValidationError(f"folder {token} (named in the topic) does not exist")
    folders = {os.path.realpath(_expand(token, cwd)) for _, token in found}
    if len(folders) > 1:
        raise ValidationError(f"the topic names several folders ({', '.join(t for _, t in found)}); pass --folder")
    if not found:
        return TopicFolder(" ".join(words), None)
    drop = {index for index, _ in found}
    for index, _ in found:
        if index > 0 and words[index - 1].lower() in _PREPOSITIONS:
            drop.add(index - 1)
    rest = " ".join(word for i, word in enumerate(words) if i not in drop).strip(" ,;:")
    return TopicFolder(rest, found[0][1])


def resolve_folder(folder: str, *, cwd: str | None = None) -> str:
    """The folder as an absolute real path; it must exist and be a folder."""
    reject_control(folder, "the folder")
    path = _expand(folder, cwd)
    if not _exists(path, folder):
        raise ValidationError(f"folder {folder if len(folder) <= 80 else shown(folder)} does not exist")
    if not _is_dir(path, folder):
        raise ValidationError(f"{folder if len(folder) <= 80 else shown(folder)} is not a folder")
    return os.path.realpath(path)


def check_name(name: str) -> str:
    if not NAME_PATTERN.match(name):
        raise ValidationError(
            f"agent name {shown(name)} is not allowed: "
            "use 1-64 letters, digits, '_' or '-', starting with a letter or digit"
        )
    return name


def name_from_folder(folder: str) -> str:
    """A valid agent name made from the folder's basename (``my app!`` -> ``my-app``)."""
    base = re.sub(r"[^A-Za-z0-9_-]+", "-", os.path.basename(folder.rstrip("/")))
    base = re.sub(r"-{2,}", "-", base).lstrip("_-").rstrip("-")
    return base[:56] or "agent"


TOPIC_WORDS = 4
TOPIC_NAME_LENGTH = 40
_FILLER = frozenset({"a", "an", "the", "to", "of", "and", "or", "in", "on", "for", "at", "with", "my", "our", "this",
                     "that", "please", "some", "it"})


def name_from_topic(topic: str) -> str | None:
    """A valid agent name from the topic's first words (``fix the billing retries`` -> ``fix-billing-retries``):
    letters and digits (accents dropped), lower case, no filler words, at most 4 words and 40 characters; ``None``
    when the topic has no such word (the folder's name is used then)."""
    ascii_text = unicodedata.normalize("NFKD", topic).encode("ascii", "ignore").decode()
    words = [word.lower() for word in re.findall(r"[A-Za-z0-9]+", ascii_text)]
    words = [word for word in words if word not in _FILLER] or words
    name = ""
    for word in words[:TOPIC_WORDS]:
        longer = f"{name}-{word}" if name else word[:TOPIC_NAME_LENGTH]
        if len(longer) > TOPIC_NAME_LENGTH:
            break
        name = longer
    return name or None


def unique_name(base: str, taken: Iterable[str]) -> str:
    """``base``, or ``base-2``, ``base-3``... whichever is free first."""
    taken_set = set(taken)
    for n in range(1, 10_000):
        candidate = numbered(base, n)
        if candidate not in taken_set:
            return candidate
    raise ValidationError(f"no free agent name left for {base!r}")


def numbered(base: str, n: int) -> str:
    """The n-th candidate name for ``base`` (``base``, ``base-2``, ...), always valid."""
    if n == 1:
        return base
    suffix = f"-{n}"
    return base[: 64 - len(suffix)] + suffix


def _words(topic: str) -> list[str]:
    """Split the topic into words, keeping a quoted phrase (a path with spaces) as one word."""
    return _WORD.findall(topic)


def _unquote(word: str) -> str:
    if len(word) >= 2 and word[0] == word[-1] and word[0] in "\"'":
        return word[1:-1]
    return word


def _expand(token: str, cwd: str | None) -> Path:
    path = Path(os.path.expanduser(token))
    return path if path.is_absolute() else Path(cwd or os.getcwd()) / path
