"""Locked, atomic edits of a user's TOML file that keep its formatting (tomlkit).

The TOML twin of :func:`pao_agents.spec.update_json`, for files such as
``~/.codex/config.toml``: comments, key order, quoting and blank lines the change
does not touch stay exactly as the user wrote them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from pao_core.errors import PaoError
from pao_core.files import atomic_write, state_lock
from pao_agents.spec import lock_for

if TYPE_CHECKING:
    import tomlkit.toml_document


class UnreadableTOML(PaoError):
    """A TOML file pao must edit does not parse; pao refuses to write over it."""


def update_toml(
    path: str | os.PathLike[str],
    change: Callable[[tomlkit.toml_document.TOMLDocument], None],
    *,
    backup: bool = True,
    timeout: float = 10.0,
) -> tomlkit.toml_document.TOMLDocument:
    """Edit a TOML file in place, safely; returns the new document.

    Under pao's lock for the file (:func:`pao_agents.spec.lock_for`): re-read the file, apply ``change`` (a function that
    mutates the tomlkit document), keep one backup (``<file>.bak``) and replace the
    file atomically, only when the text changed. A file that does not parse is never
    overwritten: :class:`UnreadableTOML` names it and the reason.
    """
    import tomlkit  # only this path needs it: start-up stays light
    import tomlkit.exceptions  # only this path needs it: start-up stays light

    target = Path(path)
    with state_lock(lock_for(target), timeout=timeout):
        try:
            original: str | None = target.read_text(encoding="utf-8")
        except FileNotFoundError:
            original = None
        except UnicodeDecodeError:
            raise UnreadableTOML(f"{target} is not UTF-8 text; fix or move it, pao will not overwrite it") from None
        try:
            document = tomlkit.parse(original or "")
        except tomlkit.exceptions.ParseError as exc:
            raise UnreadableTOML(f"{target} is not valid TOML ({exc}); fix or move it, pao will not overwrite it") from None
        change(document)
        text = tomlkit.dumps(document)
        if text != (original or ""):
            if backup and original is not None:
                atomic_write(target.with_name(target.name + ".bak"), original)
            atomic_write(target, text, mode=0o600 if original is None else None)
        return document
