"""Remote words: the one string ssh hands to the other machine's login shell, and how pao's words survive it.

ssh joins its remote words into one string that the remote user's login shell parses
(``$SHELL -c STRING``), and shells disagree on quoting: fish reads ``\\'`` inside single
quotes as an escaped quote, tcsh expands ``!`` inside them and refuses a newline, zsh
expands a word that starts with ``=``. No quoting reads the same in sh, bash, dash, zsh,
fish and tcsh, so pao quotes nothing: the string holds only words every one of them reads
as itself (:data:`NEUTRAL`; the first word may start with ``~/``, the remote HOME, which
all of them expand). The remote pao's command line, when any of its words is outside that
set, travels as one word (:func:`encode`: base64url of the NUL-joined words) that the remote
``pao machine run`` decodes (:func:`decode`) and runs: no shell sees those words.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from typing import Sequence

from pao_core.errors import ValidationError

NEUTRAL = re.compile(r"[A-Za-z0-9_./-][A-Za-z0-9_./:@%+,=-]*")
"""A word that sh, bash, dash, zsh, fish and tcsh all read as itself: no quote, space, glob, ``$``, ``!``,
``~``, brace, or a first ``=`` (zsh), ``%`` (fish's process expansion) or ``:``/``@``/``+``/``,``."""
ENCODED = re.compile(r"[A-Za-z0-9_-]+")
"""The alphabet of :func:`encode` (base64url without padding): a subset of :data:`NEUTRAL`'s."""
MAX_COMMAND = 100_000
"""Characters in the string ssh sends: under Linux's 128 KiB limit on one argument (the shell's ``-c``)."""


def neutral(word: str) -> bool:
    """Whether every login shell reads ``word`` as itself."""
    return NEUTRAL.fullmatch(word) is not None


def program_word(word: str, first: bool) -> bool:
    """Whether ``word`` may start the remote command line: neutral, the first one optionally after ``~/``."""
    return neutral(word[2:] if first and word.startswith("~/") else word)


def remote_command(words: Sequence[str]) -> str:
    """``words`` as the one string ssh sends: refused unless every login shell reads each word as itself."""
    for index, word in enumerate(words):
        if not program_word(word, index == 0):
            raise ValidationError(f"{word!r} cannot go to a remote shell as it is: a remote command's words are "
                                  f"letters, digits and _./:@%+,=- (pao sends any other word encoded)")
    command = " ".join(words)
    if len(command) > MAX_COMMAND:
        raise ValidationError(f"the command for the other machine is too long: {len(command)} characters once "
                              f"encoded, at most {MAX_COMMAND}")
    return command


def encode(argv: Sequence[str]) -> str:
    """``argv`` as one neutral word: base64url (no padding) of the words' bytes, NUL-joined."""
    for word in argv:
        if "\0" in word:
            raise ValidationError("a NUL character cannot go to another machine (no command line holds one)")
    joined = b"\0".join(os.fsencode(word) for word in argv)
    return base64.urlsafe_b64encode(joined).decode("ascii").rstrip("=")


def decode(word: str) -> list[str]:
    """The words :func:`encode` made ``word`` of, as this machine's own command line would give them."""
    not_encoded = ValidationError("machine run: WORDS is not a command line pao encoded (base64url)")
    if not ENCODED.fullmatch(word) or len(word) % 4 == 1:
        raise not_encoded
    try:
        joined = base64.urlsafe_b64decode(word + "=" * (-len(word) % 4))
    except (binascii.Error, ValueError):
        raise not_encoded from None
    return [os.fsdecode(part) for part in joined.split(b"\0")]
