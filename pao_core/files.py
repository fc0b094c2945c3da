"""Safe file writes: atomic replace, a pid lock file with stale-lock recovery, locked JSON edits.

Everything pao writes into a user's world (briefings, CLAUDE.md, ``~/.claude.json``,
the registry) goes through here, so that a crash or a concurrent writer never leaves
a half-written file behind.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import random
import socket
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterator

from pao_core.errors import PaoError


MAX_LOCK_POLL = 0.02
"""Seconds between two looks at a held lock, at most."""


PRIVATE_FILE = 0o600
"""A new file pao writes: it may hold memory or secrets, so it is the owner's alone."""
PRIVATE_DIR = 0o700


class SymlinkRefused(PaoError):
    """pao writes inside a folder it does not own only to real files, never through a link."""


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


class LockTimeout(PaoError):
    """A lock stayed held by a live process for longer than we were willing to wait."""


def atomic_write(path: str | os.PathLike[str], data: str | bytes, *, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename.

    Readers see the old content or the new content, never a mix. The file keeps its
    permission bits (or gets ``mode``, else 0600, when new). A symlink stays a symlink: the
    file it points to is the one replaced (dotfile managers link ``~/.claude.json``).
    """
    target = Path(os.path.realpath(path))
    payload = data.encode("utf-8") if isinstance(data, str) else data
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


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read_owner(lock_path: Path) -> dict[str, Any] | None:
    try:
        owner = json.loads(lock_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (ValueError, UnicodeDecodeError):
        return {}
    return owner if isinstance(owner, dict) else {}


def _is_stale(owner: dict[str, Any] | None, lock_path: Path, grace: float) -> bool:
    """A lock is stale when its owner's pid is gone (on this host).

    A lock file with unreadable content is stale once older than ``grace`` seconds
    (its writer may be between ``open`` and ``write``).
    """
    if owner is None:
        return False
    if not owner:
        try:
            return time.time() - lock_path.stat().st_mtime > grace
        except FileNotFoundError:
            return False
    if owner.get("host") not in (None, socket.gethostname()):
        return False
    return not _pid_alive(int(owner.get("pid", 0)))


def lock_owner(lock_path: str | os.PathLike[str], *, grace: float = 2.0) -> tuple[dict[str, Any], bool] | None:
    """Who holds a :func:`pid_lock` file and whether it is stale; ``None`` when it is free."""
    path = Path(lock_path)
    owner = _read_owner(path)
    if owner is None:
        return None
    return owner, _is_stale(owner, path, grace)


@contextlib.contextmanager
def pid_lock(lock_path: str | os.PathLike[str], *, timeout: float = 10.0, grace: float = 2.0) -> Iterator[None]:
    """Hold ``lock_path``, a file created with ``O_CREAT|O_EXCL`` holding pid, host and time.

    A lock whose owner process is gone is broken and taken over. Breaking is serialised
    by a kernel lock on ``<lock>.break`` and re-checks staleness under it, so two
    processes can never both break the same lock or break a live one.
    """
    path = Path(lock_path)
    give_up = time.monotonic() + timeout
    delay = 0.005
    while True:
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if _is_stale(_read_owner(path), path, grace):
                _break_stale(path, grace)
                continue
            if time.monotonic() >= give_up:
                owner = _read_owner(path) or {}
                raise LockTimeout(
                    f"{path} is held by process {owner.get('pid', '?')} since {owner.get('time', '?')}; "
                    "wait for it, or remove the file if that process is not pao"
                ) from None
            # a short, jittered wait for every waiter: a long backoff would let newcomers that
            # poll fast take the lock again and again from those that waited longest
            time.sleep(delay * random.uniform(0.5, 1.5))
            delay = min(delay * 2, MAX_LOCK_POLL)
            continue
        try:
            # no fsync: after a crash an empty lock file is judged by its age, like a dead owner's
            owner = {"pid": os.getpid(), "host": socket.gethostname(), "time": time.time()}
            os.write(fd, json.dumps(owner).encode())
        finally:
            os.close(fd)
        break
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            if (_read_owner(path) or {}).get("pid") == os.getpid():
                path.unlink()


def _break_stale(path: Path, grace: float) -> None:
    guard = path.with_name(path.name + ".break")
    with open(guard, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            if _is_stale(_read_owner(path), path, grace):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


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
    lock = Path(lock_path) if lock_path else target.with_name(target.name + ".pao.lock")
    with pid_lock(lock, timeout=timeout), (hold() if hold else contextlib.nullcontext()):
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


def private_dir(path: str | os.PathLike[str]) -> Path:
    """A folder of pao's own (PAO_HOME and below): created 0700, tightened to 0700 if wider."""
    folder = ensure_dir(path)
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
            if candidate.stat().st_mode & 0o077:
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
