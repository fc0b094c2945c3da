"""The shell line Terminal.app types into a new tab to start the agent.

``do script`` types the line into the tab's login shell (zsh, bash or sh), so every
word is quoted with :func:`shlex.quote`, and control characters are refused: a
newline or tab would be typed as a key (submitting early, or completing).
"""

from __future__ import annotations

import re
import shlex
import unicodedata
from typing import Mapping, Sequence

from pao_core.errors import ValidationError

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def launch_script(folder: str, command: Sequence[str], env: Mapping[str, str]) -> str:
    """``cd -- FOLDER && exec env NAME=VALUE... COMMAND...``, every word shell-quoted."""
    if not command:
        raise ValidationError("the host agent gave no command to start")
    _refuse_control("folder", folder)
    for word in command:
        _refuse_control("command", word)
    for name, value in env.items():
        if not _ENV_NAME.fullmatch(name):
            raise ValidationError(f"environment variable name {name!r} is not valid")
        _refuse_control(f"environment variable {name}", value)
    words = ["exec"]
    if env:
        words += ["env", *(f"{name}={value}" for name, value in env.items())]
    words += command
    return f"cd -- {shlex.quote(folder)} && " + " ".join(shlex.quote(word) for word in words)


def _refuse_control(what: str, text: str) -> None:
    for char in text:
        if unicodedata.category(char) == "Cc":
            raise ValidationError(
                f"the {what} contains a control character ({char!r}) that Terminal.app would type as a key: {text!r}"
            )
