"""The warm searcher's client: a new process asks a long-lived one over a private socket.

The first search of a new process against a server store pays for importing psycopg,
connecting (SCRAM), importing numpy and loading the sentence model before its query
runs: about ten times the query. A warm searcher (:mod:`pao_postgres.searcher.server`) keeps
all of that between processes; a new ``pao`` process hands it the search over a Unix
socket and gets the items back.

- **Per user, private.** The socket lives in a 0700 folder of the user's
  (``$XDG_RUNTIME_DIR/pao``, else pao's cache folder), is 0600, and each end checks the
  other's uid from the kernel (``SO_PEERCRED``; ``LOCAL_PEERCRED`` on macOS). The store's
  URL (maybe with a password) reaches the searcher through a pipe, never its argv.
- **Keyed.** The socket's name is a digest of everything the search depends on: the
  options (URL, schema, mode, semantic, mapping, tuning), PAO_HOME, the backend's name,
  the ``PG*`` and ``PAO_EMBEDDINGS*`` environment, the interpreter and pao's code. Other
  settings find another socket; the searcher checks the full key of every request.
- **Never needed.** When the searcher is absent, stale, refuses, breaks or does not
  answer within :data:`ANSWER_SHARE` of the time left, the search runs in-process as it
  always did; a searcher that timed out is skipped for :data:`SKIP_SLOW_S`. A store error
  the searcher reports (the server is down) is raised as the in-process search would.
- **Fresh.** The searcher runs the very search the process would (the MCP memory file's
  sync first, then the query, then provenance) on the store as it is at that moment.
- **On demand.** After an in-process search, the process starts one in the background
  (own session, no terminal, detached) unless one runs or starts; it exits after
  ``warm_searcher_idle_s`` without a request.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from pao_core.models import MemoryItem, SearchResults
from pao_postgres import private_socket
from pao_postgres.errors import LongtermError
from pao_postgres.private_socket import exchange, no_follow_opener, peer_uid, private_dir, read_line, runtime_dir
from pao_postgres.private_socket import recent as _recent, touch as _touch

if TYPE_CHECKING:
    from pao_postgres.options import LongtermOptions

PROTOCOL = 1
ENV = "PAO_WARM_SEARCHER"
"""``0`` turns the searcher off whatever the configuration says, ``1`` on (server stores only)."""
ANSWER_SHARE = 0.5
"""At most this share of a search's time left is spent waiting for the searcher."""
SKIP_SLOW_S = 60.0
"""A searcher that did not answer in time is not asked again for this long."""
RETRY_START_S = 300.0
"""A searcher that failed to start is not started again for this long (its reason is kept)."""
_started: list[Any] = []  # starters' handles, held so none is collected while it runs


def enabled(options: LongtermOptions) -> bool:
    """Whether searches of this store go through (and start) a warm searcher: server stores only."""
    forced = os.environ.get(ENV, "").strip().lower()
    wanted = forced in ("1", "true", "yes", "on") if forced else options.warm_searcher
    return wanted and bool(options.url.strip())


def _code_stamp() -> list[int]:
    """Files and newest change of the code a searcher runs: an upgraded or edited pao gets a new searcher."""
    import pao_core  # loaded already: only its folder is wanted
    import pao_embeddings  # a small package module (the model loads on use): only its folder is wanted

    stamp = []
    for package in (pao_core, pao_embeddings, sys.modules["pao_postgres"]):
        times = [os.stat(os.path.join(folder, name)).st_mtime_ns
                 for folder, _, names in os.walk(os.path.dirname(package.__file__ or "")) for name in names
                 if name.endswith(".py")]
        stamp += [len(times), max(times, default=0)]
    return stamp


def store_key(options: LongtermOptions, home: Path, name: str) -> str:
    """The digest naming the searcher of this store, these settings and this code."""
    material = {
        "protocol": PROTOCOL, "name": name, "home": str(home), "options": attrs.asdict(options),
        "environment": {k: v for k, v in os.environ.items() if k.startswith(("PG", "PAO_EMBEDDINGS"))},
        "python": sys.executable, "code": _code_stamp(),
    }
    text = json.dumps(material, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def paths(folder: Path, key: str) -> dict[str, Path]:
    """The searcher's files: its socket, lock (holding its pid), start error and slow marker."""
    stem = folder / f"lt-{key[:20]}"
    return {part: stem.with_suffix("." + part) for part in ("sock", "lock", "error", "slow")}


def request(key: str, message: dict[str, Any], deadline: float) -> dict[str, Any] | None:
    """``message`` to the searcher of ``key``; its answer, or None when there is none to ask
    (absent, stale socket, not the user's). OSError/ValueError when it breaks or is slow."""
    folder = private_dir()
    return None if folder is None else _ask_socket(paths(folder, key)["sock"], {"key": key, **message}, deadline)


def search(options: LongtermOptions, home: Path, name: str, query: str, limit: int, deadline: float,
           memory_file: Path | None) -> list[MemoryItem] | None:
    """The search through the warm searcher; None when the caller is to search in-process."""
    key = store_key(options, home, name)
    folder = private_dir()
    if folder is None or _recent(paths(folder, key)["slow"], SKIP_SLOW_S):
        return None
    wait_until = time.monotonic() + ANSWER_SHARE * max(0.0, deadline - time.monotonic())
    message = {"op": "search", "query": query, "limit": limit, "budget": deadline - time.monotonic(),
               "memory_file": str(memory_file.absolute()) if memory_file else None}
    try:
        answer = _ask_socket(paths(folder, key)["sock"], {"key": key, **message}, wait_until)
    except (OSError, ValueError):  # broken, killed mid-request, or slow: in-process, as always
        _touch(paths(folder, key)["slow"])
        return None
    if answer is not None and "error" in answer:
        raise LongtermError(str(answer["error"]))  # the store's own failure: as in-process
    try:
        items = [item_from_json(item) for item in answer["items"]] if answer else None
    except (KeyError, TypeError, ValueError):
        return None  # refused, busy, or an answer this process cannot read: in-process
    if items is None:
        return None
    return SearchResults(items, answer["note"]) if answer.get("note") else items


def start(options: LongtermOptions, home: Path, name: str) -> bool:
    """Start the searcher of this store in the background unless one runs or starts (or a start
    failed lately); True when one was started. Never waits for it."""
    import fcntl  # POSIX only: the searcher's lock
    import subprocess  # only when starting one

    folder = private_dir()
    if folder is None:
        return False
    key = store_key(options, home, name)
    files = paths(folder, key)
    if _recent(files["error"], RETRY_START_S):
        return False
    try:
        with open(files["lock"], "a", opener=no_follow_opener) as lock:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released on close: the searcher takes it
    except BlockingIOError:
        return False  # one runs, or is starting
    except OSError:
        return False
    files["slow"].unlink(missing_ok=True)
    # the URL (maybe with a password) travels through the pipe, not the environment or argv
    environment = {k: v for k, v in os.environ.items() if k != "PAO_POSTGRES_URL"}
    spec = {"key": key, "name": name, "home": str(home), "options": attrs.asdict(options)}
    try:
        starter = subprocess.Popen(
            [sys.executable, "-m", "pao_postgres.searcher.server"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, close_fds=True, start_new_session=True, cwd="/", env=environment,
        )
        assert starter.stdin is not None
        starter.stdin.write(json.dumps(spec, default=str).encode())
        starter.stdin.close()
    except OSError:
        return False
    _started[:] = [*(handle for handle in _started if handle.poll() is None), starter]  # reaps finished starters
    return True


def status(options: LongtermOptions, home: Path, name: str, deadline: float) -> dict[str, Any] | None:
    """The running searcher's status (pid, uptime, searches, idle exit), or None when none runs."""
    try:
        return request(store_key(options, home, name), {"op": "status"}, deadline)
    except (OSError, ValueError):
        return {"unresponsive": True}


def describe(options: LongtermOptions, home: Path, name: str, deadline: float) -> str:
    """One line for ``pao doctor``: whether a warm searcher serves this store."""
    if not enabled(options):
        return "warm searcher: off" + (f" ({ENV}=0)" if options.warm_searcher and options.url.strip() else "")
    if private_dir() is None:
        return f"warm searcher: not used ({runtime_dir()} must be a folder of yours that only you can enter: 0700)"
    found = status(options, home, name, deadline)
    if found is None:
        folder = private_dir()
        error = paths(folder, store_key(options, home, name))["error"] if folder else None
        reason = error.read_text(errors="replace").strip() if error and _recent(error, RETRY_START_S) else ""
        return "warm searcher: not running" + (f" (last start failed: {reason})" if reason else
                                               " (the next search starts one)")
    if "pid" not in found:  # broken, busy, or of another protocol
        return "warm searcher: running but not answering (searches run in-process)"
    return (f"warm searcher: running (pid {found['pid']}, {found['searches']} searches, "
            f"exits after {found['idle_s'] // 60} min idle)")


def stop_all(deadline: float) -> list[int]:
    """Stop every warm searcher of this user (all stores and settings); their pids. One that
    does not answer, yet holds its lock, gets SIGTERM."""
    import fcntl  # POSIX only: the searchers' locks
    import signal  # only to stop one that does not answer

    folder = private_dir()
    if folder is None:
        return []
    stopped = []
    for lock in sorted(folder.glob("lt-*.lock")):
        try:
            answer = _ask_socket(lock.with_suffix(".sock"), {"op": "stop", "key_prefix": lock.stem[3:]}, deadline)
        except (OSError, ValueError):
            answer = None
        if answer and answer.get("stopping"):
            stopped.append(int(answer["pid"]))
            continue
        try:
            with open(lock, "r+", opener=no_follow_opener) as handle:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    continue  # free: none runs
                except BlockingIOError:
                    pid = int(handle.read().strip() or 0)
            if pid > 0:
                os.kill(pid, signal.SIGTERM)
                stopped.append(pid)
        except (OSError, ValueError):
            continue
    return stopped


def sweep(folder: Path, key: str) -> list[str]:
    """Remove what searchers of other keys (settings or code since changed) left in ``folder``."""
    return private_socket.sweep(folder, "lt", key, RETRY_START_S)


def _ask_socket(path: Path, message: dict[str, Any], deadline: float) -> dict[str, Any] | None:
    return private_socket.ask(path, {"protocol": PROTOCOL, **message}, deadline)


# -- items on the wire ------------------------------------------------------------------


def item_json(item: MemoryItem) -> dict[str, Any]:
    fields = attrs.asdict(item, recurse=False)
    fields["timestamp"] = item.timestamp.isoformat() if item.timestamp else None
    fields["meta"], fields["fusion"] = dict(item.meta), dict(item.fusion)
    return fields


def item_from_json(fields: dict[str, Any]) -> MemoryItem:
    stamp = fields.get("timestamp")
    return MemoryItem(**{**fields, "timestamp": dt.datetime.fromisoformat(stamp) if stamp else None})
