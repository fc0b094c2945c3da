"""Safe file writes: atomic replace, kernel-released locks, private folders and files.

Everything pao writes into a user's world (briefings, a CLI's context and settings files,
the registry) goes through here, so that a crash or a concurrent writer never leaves
a half-written file behind.
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import stat
import tempfile
import time
from pathlib import Path
from typing import Iterator

from pao_core.errors import PaoError

PRIVATE_FILE = 0o600
"""A new file pao writes: it may hold memory or secrets, so it is the owner's alone."""
PRIVATE_DIR = 0o700


class SymlinkRefused(PaoError):
    """pao writes inside a folder it does not own only to real files, never through a link."""


class LockTimeout(PaoError):
    """A lock stayed held by a live process for longer than we were willing to wait."""


def atomic_write(path: str | os.PathLike[str], data: str | bytes, *, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename.

    Readers see the old content or the new content, never a mix. The file keeps its
    permission bits (or gets ``mode``, else 0600, when new). A symlink stays a symlink: the
    file it points to is the one replaced (dotfile managers link a CLI's settings file).
    """
    target = Path(os.path.realpath(path))
    payload = data.encode("utf-8") if isinstance(data, str) else data
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISREG(target.stat().st_mode):  # a FIFO, device or socket is never replaced
            raise NotRegularFile(f"{path} is not a regular file (a FIFO, device or socket); pao will not replace it")
    if mode is None:
        try:
            mode = target.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = PRIVATE_FILE
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    _fsync_dir(target.parent)


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


class NotRegularFile(PaoError):
    """pao reads and writes regular files only: never a FIFO (it would hang), a device or a socket."""


def open_no_follow(path: str | os.PathLike[str], flags: int, *, follow: bool = False, owned: bool = True) -> int:
    """An fd on the regular file ``path`` (created 0600), never through a link (unless ``follow``) nor
    blocking on a FIFO; ``owned``: this user's. Else :class:`SymlinkRefused` or :class:`NotRegularFile`."""
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW), PRIVATE_FILE)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:
            raise SymlinkRefused(f"{path} is a symbolic link; pao will not open it") from None
        if exc.errno == errno.ENXIO:  # a FIFO opened for writing with no reader
            raise NotRegularFile(f"{path} is not a regular file (a FIFO or socket); pao will not use it") from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or (owned and info.st_uid != os.geteuid()):
        os.close(fd)
        what = "not yours" if stat.S_ISREG(info.st_mode) else "not a regular file (a FIFO, device or socket)"
        raise NotRegularFile(f"{path} is {what}; pao will not use it")
    return fd


def take_lock(lock_path: str | os.PathLike[str], *, timeout: float = 10.0) -> int:
    """The fd of ``lock_path`` (0600, never through a link) holding an exclusive ``flock``, released when
    closed in every process that has it (an fd passed to a child with ``pass_fds`` keeps it held there)."""
    import fcntl  # POSIX only: pao's locks

    fd = open_no_follow(lock_path, os.O_RDWR | os.O_CREAT, owned=False)  # a lock holds no data: any owner
    give_up, delay = time.monotonic() + timeout, 0.002
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                if time.monotonic() >= give_up:
                    raise LockTimeout(f"{lock_path} is held by another pao process for over {timeout:g} s; "
                                      "try again when it has finished") from None
            # short and jittered: a long or fixed wait lets fast newcomers take it from those waiting longest
            time.sleep(delay * random.uniform(0.5, 1.5))
            delay = min(delay * 2, 0.02)
    except BaseException:
        os.close(fd)
        raise


@contextlib.contextmanager
def state_lock(lock_path: str | os.PathLike[str], *, timeout: float = 10.0) -> Iterator[None]:
    """Hold ``lock_path`` exclusively for the block (:func:`take_lock`): the kernel releases it however its
    holder dies, and no pid in a file can be mistaken for a live owner. The file stays; it means nothing."""
    fd = take_lock(lock_path, timeout=timeout)
    try:
        yield
    finally:
        os.close(fd)


def lock_is_held(lock_path: str | os.PathLike[str]) -> bool:
    """True when another process holds :func:`state_lock` on ``lock_path`` right now."""
    if not os.path.exists(lock_path):
        return False
    try:
        with state_lock(lock_path, timeout=0):
            return False
    except LockTimeout:
        return True


def private_dir(path: str | os.PathLike[str]) -> Path:
    """A folder of pao's own (PAO_HOME and below): created 0700, tightened to 0700 if wider; never the root, the
    user's home or a folder above it, which other programs need open (``PAO_HOME=/`` would lock the machine)."""
    folder = ensure_dir(path)
    resolved, home = folder.resolve(), Path.home().resolve()
    if resolved == Path(resolved.anchor) or resolved == home or resolved in home.parents:
        raise PaoError(f"{folder}: the root or your home folder cannot be pao's private folder (set PAO_HOME to "
                       "a folder of its own)")
    with contextlib.suppress(OSError):
        info = folder.stat()
        if info.st_mode & 0o077 and info.st_uid == os.geteuid():
            os.chmod(folder, PRIVATE_DIR)
    return folder


def private_file(path: str | os.PathLike[str], *sidecars: str) -> Path:
    """``path`` (and ``path + sidecar`` files that exist, such as SQLite's ``-wal``) exists and is 0600.

    For files another library creates (SQLite): made before it opens them, so they are
    never readable by others, not even for a moment.
    """
    target = Path(path)
    private_dir(target.parent)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE))
    for candidate in (target, *(Path(f"{target}{suffix}") for suffix in sidecars)):
        with contextlib.suppress(OSError):
            info = candidate.lstat()  # a link is not tightened: chmod would change the file it points to
            if stat.S_ISREG(info.st_mode) and info.st_mode & 0o077:
                os.chmod(candidate, PRIVATE_FILE)
    return target


def ensure_dir(path: str | os.PathLike[str]) -> Path:
    """Create a folder (and parents) if missing; return it."""
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR)
    except OSError as exc:
        if exc.errno == errno.EEXIST:
            raise PaoError(f"{folder} exists and is not a folder") from None
        raise PaoError(f"cannot create {folder}: {exc.strerror}") from None
    return folder
