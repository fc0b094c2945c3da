"""Locked edits of the files agents and their CLIs read: a host's settings (``~/.claude.json``), the registry.

Under pao's lock for the file (:func:`lock_for`, under ``$PAO_HOME/locks``), re-read, change, and
replace atomically (:func:`pao_core.files.atomic_write`), never through a link where that is asked.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any, Callable, ContextManager

from pao_core.errors import PaoError
from pao_core.files import SymlinkRefused, atomic_write, private_dir, state_lock


def refuse_symlink(path: str | os.PathLike[str], levels: int = 2) -> None:
    """Raise :class:`SymlinkRefused` when ``path`` or one of its ``levels - 1`` nearest folders is a link.

    For files pao writes inside the agent's folder (``.claude/settings.local.json``,
    ``.git/info/exclude``): a link there could send the write to any file the user owns.
    """
    candidate = Path(path)
    for _ in range(levels):
        if candidate.is_symlink():
            raise SymlinkRefused(f"{candidate} is a symbolic link; pao will not write {Path(path).name} through it")
        candidate = candidate.parent


def lock_for(target: Path) -> Path:
    """pao's lock for editing ``target``, under ``$PAO_HOME/locks`` (never a file beside the user's)."""
    import hashlib  # only this path needs it: start-up stays light

    from pao_core.paths import home_path  # only this path needs it: start-up stays light

    key = hashlib.sha256(os.fsencode(target)).hexdigest()[:24]
    return private_dir(home_path() / "locks") / f"{target.name[:40]}-{key}.lock"


class UnreadableJSON(PaoError):
    """A JSON file pao must edit does not parse; pao refuses to write over it."""


def update_json(
    path: str | os.PathLike[str],
    change: Callable[[dict[str, Any]], None],
    *,
    lock_path: str | os.PathLike[str] | None = None,
    backup: bool = True,
    timeout: float = 10.0,
    hold: Callable[[], ContextManager[Any]] | None = None,
    no_symlink: bool = False,
) -> dict[str, Any]:
    """Edit a JSON object file in place, safely; returns the new content.

    Under the lock: re-read the file immediately before writing, apply ``change`` to
    it (a function that mutates the dict), keep one backup (``<file>.bak``) of the
    previous content, and replace the file atomically. Keys the change does not touch
    are kept as they were, in their order. A file that does not parse is never
    overwritten: :class:`UnreadableJSON` says which file and why. ``hold``, when
    given, makes a second lock (another program's own, such as Claude Code's) that is
    held inside pao's lock for just the read-change-write. The backup is never readable by
    more people than the file. ``no_symlink``: refuse a link at the file or its folder.
    """
    if no_symlink:
        refuse_symlink(path)
    target = Path(os.path.realpath(path))  # the lock, backup and write all at the real file
    lock = Path(lock_path) if lock_path else lock_for(target)
    with state_lock(lock, timeout=timeout), (hold() if hold else contextlib.nullcontext()):
        try:
            original = target.read_bytes()
        except FileNotFoundError:
            original = None
        try:
            data = json.loads(original) if original and original.strip() else {}
        except (ValueError, UnicodeDecodeError) as exc:
            raise UnreadableJSON(f"{target} is not valid JSON ({exc}); fix or move it, pao will not overwrite it") from None
        if not isinstance(data, dict):
            raise UnreadableJSON(f"{target} holds a JSON {type(data).__name__}, not an object; pao will not overwrite it")
        before = json.dumps(data, sort_keys=True)
        change(data)
        if json.dumps(data, sort_keys=True) != before:
            if backup and original is not None:
                atomic_write(target.with_name(target.name + ".bak"), original, mode=target.stat().st_mode & 0o777)
            atomic_write(target, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        return data
