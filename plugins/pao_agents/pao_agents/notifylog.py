"""The caps on an agent's logs, which grow at every event of a session that may last all day: ``events.jsonl`` (each
hook's ``sh`` appends one line, :func:`pao_agents.agentdir.append_command`) and ``notify.log`` (the recorder's errors,
:mod:`pao_agents.eventhook`).

The recorder trims both when it starts: over a limit, a file is replaced atomically by its newest whole lines, 0600,
never through a symbolic link. A trim and every append take the agent folder's :data:`LOCK_FILE` (an ``flock``: the
hooks' ``sh`` through ``flock(1)`` where the system has it, as on Linux), so a line appended while a trim reads the file
is never left in the file the trim replaces.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator

from pao_core.errors import PaoError
from pao_core.files import PRIVATE_FILE, atomic_write, open_no_follow, state_lock

LIMIT = 64 * 1024
"""Bytes ``notify.log`` may reach before the recorder trims it."""
KEEP = 32 * 1024
"""Bytes of its newest lines a trim keeps."""
LOCK_FILE = "logs.lock"
"""In the agent's folder: held by each append to its logs and by a trim of them."""
LOCK_WAIT = 2.0
"""Seconds an append or a trim waits for the lock; past it, it goes on without (a log line never stops a CLI)."""


@contextlib.contextmanager
def logs_locked(folder: Path) -> Iterator[None]:
    """Hold the agent folder's log lock for the block, or go on without it when it cannot be had in time."""
    with contextlib.ExitStack() as held:
        with contextlib.suppress(OSError, PaoError):
            held.enter_context(state_lock(folder / LOCK_FILE, timeout=LOCK_WAIT))
        yield


def trim_log(log: Path, limit: int = LIMIT, keep: int = KEEP) -> None:
    """Cut ``log`` to its newest whole lines when over ``limit``, under the folder's log lock; this process's stderr,
    when it is ``log`` (the hook's ``2>>``), follows to the new file. A log that cannot be trimmed is left as it is."""
    with logs_locked(log.parent), contextlib.suppress(OSError, PaoError):
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


def append_line(log: Path, line: str) -> bool:
    """Append one line to ``log`` (created 0600, never through a link) under the folder's log lock: into the file
    that is there now, not one a trim has replaced since this process started. ``False``: it could not."""
    with logs_locked(log.parent), contextlib.suppress(OSError, PaoError):
        fd = open_no_follow(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, (line.rstrip("\n") + "\n").encode("utf-8", "replace"))
        finally:
            os.close(fd)
        return True
    return False
