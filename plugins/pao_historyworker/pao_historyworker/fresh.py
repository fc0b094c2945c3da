"""History that stays fresh: index new and grown transcripts before a search, in a bound.

``pao brief`` and ``pao spawn`` search the local index; a session of this morning is
only there once its transcript is indexed. Before each search the backend compares
the transcripts folder with the index (one ``stat`` per file, no reading: a few
milliseconds for thousands of files), and when something is new or grown it reads
what fits a time budget, newest first, a grown file from its last exchange on. What
does not fit is left for the next search or ``pao history index``, and the search
says how much is left (:attr:`Freshness.note`).

One indexer at a time: the first process to find work takes a lock file beside the
index without waiting; another that finds it held searches the index as it is.
Embedding (the ``embeddings`` extra) is not done here: it costs seconds. The backend
leaves it, and the files past the bound, to a background ``pao history index`` once the
search is over (:mod:`pao_embeddings.later`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import attrs

from pao_core.files import LockTimeout, take_lock

from pao_historyworker.index import (
    Pending, connect, finish, forget_files, index_file, indexed_roots, pending, remember_root, transcript_files,
    unread_bytes, up_to_date,
)

MIN_RATE = 5e6
"""Bytes per second assumed before a file was read (transcript parsing runs at 20-60 MB/s)."""
FIRST_FILE_S = 0.002
"""Time assumed for the first file's transaction, besides its bytes."""


@attrs.frozen
class Freshness:
    """What one refresh did and what it left."""

    files_indexed: int = 0
    files_removed: int = 0
    exchanges_added: int = 0
    files_left: int = 0
    bytes_left: int = 0
    busy: bool = False
    """Another process held the indexing lock: nothing was indexed here."""
    elapsed_ms: float = 0.0

    @property
    def note(self) -> str | None:
        if self.busy:
            return "another pao process is indexing new transcripts; searched the index as it is"
        if self.files_left:
            return (
                f"{self.files_left} new or grown transcripts ({_size(self.bytes_left)}) not indexed yet within the"
                f" search's time budget; they are indexed by the next searches or 'pao history index'"
            )
        return None


def lock_for(index_path: Path) -> Path:
    """The indexing lock of ``index_path``: a file beside it, taken with pao's own lock (never through a link)."""
    return index_path.with_name(index_path.name + ".lock")


def refresh(index_path: Path, default_root: Path, budget_s: float) -> Freshness:
    """Index what changed into ``index_path`` within ``budget_s`` seconds: under the folders
    the index was built from (``pao history index [DIR]``), else under ``default_root``."""
    started = time.monotonic()
    deadline = started + max(0.0, budget_s)
    roots = [default_root]
    scans: dict[Path, dict] = {}
    if index_path.exists() and index_path.stat().st_size:  # an empty one is being created
        conn = connect(index_path)
        try:
            roots = [root for root in indexed_roots(conn) or roots if root.exists()]
            scans = {root: transcript_files(root) for root in roots}
            if all(up_to_date(conn, root, scans[root]) for root in roots):
                return Freshness(elapsed_ms=_ms(started))
        finally:
            conn.close()
    elif not default_root.is_dir():
        return Freshness()
    index_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        held = take_lock(lock_for(index_path), timeout=0)
    except LockTimeout:
        return Freshness(busy=True, elapsed_ms=_ms(started))
    try:
        conn = connect(index_path, create=True)
        try:
            return _index_within(conn, roots, scans, deadline, started)
        finally:
            conn.close()
    finally:
        os.close(held)


def _index_within(conn, roots: list[Path], scans: dict, deadline: float, started: float) -> Freshness:  # type: ignore[no-untyped-def]
    removed = 0
    changed = []
    for root in roots:  # the index again, under the lock: another process may have just indexed
        todo: Pending = pending(conn, root, scans.get(root))
        removed += forget_files(conn, todo.gone) if todo.gone else 0
        changed += todo.changed
        remember_root(conn, root)
    changed.sort(key=lambda entry: entry[1][1], reverse=True)
    indexed = added = read_bytes = 0
    spent = 0.0
    left: list[int] = []
    for key, stamp, row in changed:
        size = unread_bytes(stamp, row)
        now = time.monotonic()
        # what this file should cost: its bytes at the rate seen so far, and no less than
        # the files read so far took each (a busy machine pays per file, not per byte)
        rate = max(MIN_RATE, read_bytes / spent) if spent > 0.001 else MIN_RATE
        expected = max(size / rate, spent / indexed if indexed else FIRST_FILE_S)
        if now + expected > deadline:
            left.append(size)
            continue
        done = index_file(conn, key, stamp, row)
        if done is None:
            continue
        indexed, added, read_bytes = indexed + 1, added + done[0], read_bytes + size
        spent += time.monotonic() - now
    if indexed or removed:
        finish(conn)
    return Freshness(indexed, removed, added, len(left), sum(left), elapsed_ms=_ms(started))


def _size(count: int) -> str:
    for unit in ("bytes", "kB", "MB", "GB"):
        if count < 1000 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "bytes" else f"{count:.1f} {unit}"
        count /= 1000  # type: ignore[assignment]
    return f"{count} bytes"


def _ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 2)
