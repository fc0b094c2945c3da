"""The cap on an agent's ``notify.log``: the recorder's errors (``pao_agents.eventhook``), which its hook's
``sh`` appends with ``2>>`` at every state-changing event, so a failure repeated all day would grow it without end.

The recorder trims it when it starts: over :data:`LIMIT` bytes, the file is replaced atomically by its newest
whole lines (at most :data:`KEEP` bytes), 0600, never through a symbolic link.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from pao_core.errors import PaoError
from pao_core.files import PRIVATE_FILE, atomic_write, open_no_follow

LIMIT = 64 * 1024
"""Bytes ``notify.log`` may reach before the recorder trims it."""
KEEP = 32 * 1024
"""Bytes of its newest lines a trim keeps."""


def trim_log(log: Path, limit: int = LIMIT, keep: int = KEEP) -> None:
    """Cut ``log`` to its newest whole lines when over ``limit``; this process's stderr, when it is ``log``
    (the hook's ``2>>``), follows to the new file. A log that cannot be trimmed is left as it is."""
    with contextlib.suppress(OSError, PaoError):
        fd = open_no_follow(log, os.O_RDONLY)
        try:
            before = os.fstat(fd)
            if before.st_size <= limit:
                return
            tail = os.pread(fd, keep, before.st_size - keep)
        finally:
            os.close(fd)
        atomic_write(log, tail[tail.find(b"\n") + 1:], mode=PRIVATE_FILE)  # from the first whole line
        stderr = os.fstat(2)
        if (stderr.st_dev, stderr.st_ino) == (before.st_dev, before.st_ino):
            fresh = open_no_follow(log, os.O_WRONLY | os.O_APPEND)
            os.dup2(fresh, 2)
            os.close(fresh)
