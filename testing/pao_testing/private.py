"""A folder no one but root can write to, up to ``/``, wherever the checkout is.

Gemini CLI (0.61 on) reads a system-defaults file only when root owns it and every folder
above it, none writable by group or others; pao's per-agent file lives under PAO_HOME,
which for root is by default under root's home (``~/.local/share/pao``). Tests that need
Gemini to read it put PAO_HOME in such a folder: under root's home from the password
database (not ``$HOME``, not the checkout, which may be below the world-writable ``/tmp``).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import tempfile
from pathlib import Path
from typing import Iterator


@contextlib.contextmanager
def root_private_dir(prefix: str) -> Iterator[Path]:
    """A new 0700 folder that Gemini CLI trusts for system settings (as root; as anyone else,
    a plain temporary folder: Gemini trusts none of theirs), removed afterwards."""
    parent = Path(pwd.getpwuid(0).pw_dir) / ".cache" / "pao-tests" if os.geteuid() == 0 else None
    if parent is not None:
        parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        for place in (parent, *parent.parents):  # made by someone else: say so, not a puzzling refusal later
            info = os.stat(place)
            assert info.st_uid == 0 and not info.st_mode & 0o022, f"{place} is not root's alone"
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
