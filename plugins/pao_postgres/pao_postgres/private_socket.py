"""A user's private Unix sockets to pao's background processes (the warm searcher, the warm brief).

The standard library alone, so that a new ``pao`` process can ask one before it imports anything
else. Every socket lives in a folder of the user's alone (``$XDG_RUNTIME_DIR/pao``, else pao's cache
folder), made 0700 and never used when it is a link, another's or open to others; a socket is 0600,
and each end checks the other's uid from the kernel (``SO_PEERCRED``; ``LOCAL_PEERCRED`` on macOS).
Messages are one JSON line each way.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import struct
import sys
import time
from pathlib import Path
from typing import Any, BinaryIO

import _socket  # the C module: socket.py builds enums of every constant at import, a cost on each new process

MAX_MESSAGE = 4 * 1024 * 1024


def runtime_dir() -> Path:
    """The user's private folder of sockets (made 0700 by :func:`private_dir`)."""
    base = os.environ.get("XDG_RUNTIME_DIR", "")
    if base and os.path.isabs(base):
        return Path(base) / "pao"
    import platformdirs  # only without XDG_RUNTIME_DIR (macOS)

    return Path(platformdirs.user_cache_dir("pao")) / "run"


def private_dir() -> Path | None:
    """:func:`runtime_dir`, created 0700; None when it is not the user's alone (nothing is used then)."""
    folder = runtime_dir()
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(folder)
    except OSError:
        return None
    if not os.path.isdir(folder) or os.path.islink(folder) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None
    return folder


def peer_uid(connection: _socket.socket) -> int | None:
    """The uid of the process at the other end of a Unix socket, from the kernel."""
    try:
        if hasattr(_socket, "SO_PEERCRED"):  # Linux: struct ucred {pid, uid, gid}
            return struct.unpack("3i", connection.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12))[1]
        if sys.platform == "darwin":  # LOCAL_PEERCRED at SOL_LOCAL: struct xucred {version, uid, ...}
            return struct.unpack("2I", connection.getsockopt(0, 0x001, 76)[:8])[1]
    except OSError:
        return None
    return None


def exchange(connection: _socket.socket, message: dict[str, Any], deadline: float) -> dict[str, Any]:
    """Send one JSON line and read one back before ``deadline`` (OSError, ValueError otherwise)."""
    connection.settimeout(max(0.001, deadline - time.monotonic()))
    connection.sendall(json.dumps(message).encode() + b"\n")
    return json.loads(read_line(connection, deadline))


def read_line(connection: _socket.socket, deadline: float) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        connection.settimeout(max(0.001, deadline - time.monotonic()))
        chunk = connection.recv(65536)
        if not chunk:
            raise ConnectionError("the other end closed the connection")
        chunks.append(chunk)
        size += len(chunk)
        if b"\n" in chunk:
            return b"".join(chunks).split(b"\n", 1)[0]
        if size > MAX_MESSAGE:
            raise ValueError("message too long")


def ask(path: Path | str, message: dict[str, Any], deadline: float,
        connect_by: float | None = None) -> dict[str, Any] | None:
    """``message`` to the process listening at ``path``, its answer; None when none listens there or it is not
    the user's. OSError/ValueError when it breaks or does not connect by ``connect_by`` (else ``deadline``) or
    answer by ``deadline``."""
    connection = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        connection.settimeout(max(0.001, (connect_by or deadline) - time.monotonic()))
        try:
            connection.connect(str(path))
        except (FileNotFoundError, ConnectionRefusedError):
            return None  # none runs (a refused socket is a stale file: the next process replaces it)
        if peer_uid(connection) != os.getuid():
            return None
        return exchange(connection, message, deadline)
    finally:
        connection.close()


def no_follow_opener(path: str, flags: int) -> int:
    """0600, never through a link nor a FIFO or device planted at the path (an ``OSError``, as a missing file)."""
    from pao_core.errors import PaoError  # only when a process's file is opened
    from pao_core.files import open_no_follow  # likewise

    try:
        return open_no_follow(path, flags)
    except PaoError as exc:
        raise OSError(errno.ELOOP, str(exc)) from None


def recent(path: Path, seconds: float) -> bool:
    try:
        return time.time() - os.stat(path).st_mtime < seconds
    except OSError:
        return False


def touch(path: Path) -> None:
    try:
        fd = no_follow_opener(str(path), os.O_WRONLY | os.O_CREAT)
        try:
            os.utime(fd)
        finally:
            os.close(fd)
    except OSError:
        pass


# -- the listening end ------------------------------------------------------------------------


def detach() -> None:
    """Become nobody's child in a session of its own, with no terminal and stdio on the null device, so the
    process that started it never waits for it and holds none of its pipes; SIGTERM ends it through its
    ``finally`` blocks (its socket removed)."""
    import signal  # the listening end only

    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    if os.fork() > 0:
        os._exit(0)  # the starter's child ends now: the server is nobody's child to wait for
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)


def take_lock(path: Path) -> BinaryIO | None:
    """The lock file at ``path``, held (``flock``) and holding this pid; None when another process holds it or
    it cannot be opened (never through a planted link)."""
    import fcntl  # POSIX only

    while True:
        try:
            lock = open(path, "a+b", opener=no_follow_opener)  # noqa: SIM115 (held as long as the process)
        except OSError:
            return None
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            return None  # another process of this key runs or starts
        with contextlib.suppress(FileNotFoundError):
            if os.stat(path).st_ino == os.fstat(lock.fileno()).st_ino:
                break
        lock.close()  # removed by a sweep between the open and the lock: take the new file
    lock.truncate(0)
    lock.write(f"{os.getpid()}\n".encode())
    lock.flush()
    return lock


def held(folder: Path, prefix: str) -> int:
    """How many ``PREFIX-*.lock`` in ``folder`` a process holds (its server runs or starts)."""
    import fcntl  # POSIX only: the locks

    count = 0
    for lock in folder.glob(f"{prefix}-*.lock"):
        try:
            with open(lock, "rb", opener=no_follow_opener) as handle:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            count += 1
        except OSError:  # gone meanwhile, or not a file of ours
            continue
    return count


def record_failure(path: Path, exc: BaseException) -> None:
    """Why a start failed, in one line at ``path`` for ``pao doctor`` (a URL in it keeps no password)."""
    from pao_core.sanitize import mask_url  # only a failed start

    with open(path, "w", opener=no_follow_opener) as error:
        error.write(mask_url(" ".join(f"{type(exc).__name__}: {exc}".split())[:300]) + "\n")


def bind(path: Path) -> tuple[Any, int]:
    """A listening 0600 socket at ``path`` (a stale one replaced: the caller holds the lock) and its inode."""
    import socket  # the listening end only

    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    previous = os.umask(0o177)
    try:
        listener.bind(str(path))
    finally:
        os.umask(previous)
    os.chmod(path, 0o600)
    listener.listen(16)
    return listener, os.stat(path).st_ino


def sweep(folder: Path, prefix: str, key: str, keep_errors_s: float) -> list[str]:
    """Remove what processes of other keys (settings or code since changed) left in ``folder``: each
    ``PREFIX-<key>.lock`` no process holds, with its socket, slow marker and an error older than
    ``keep_errors_s``. A lock is removed only while this process holds it and is still the file at its path;
    names not of this shape are never touched. The stems removed."""
    import fcntl  # POSIX only: the locks
    import re  # only here: a background process's chore

    removed = []
    for lock in folder.glob(f"{prefix}-*.lock"):
        if lock.stem == f"{prefix}-{key[:20]}" or not re.fullmatch(rf"{prefix}-[0-9a-f]{{20}}", lock.stem):
            continue
        try:
            with open(lock, "r+", opener=no_follow_opener) as handle:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held: a process runs or starts
                if os.fstat(handle.fileno()).st_ino != os.stat(lock).st_ino:
                    continue  # replaced meanwhile: the new one is someone's
                for part in ("sock", "slow", "error", "off"):
                    sibling = lock.with_suffix("." + part)
                    if part != "error" or not recent(sibling, keep_errors_s):
                        sibling.unlink(missing_ok=True)
                lock.unlink()
        except OSError:  # held (BlockingIOError), gone, or not ours to remove
            continue
        removed.append(lock.stem)
    return removed
