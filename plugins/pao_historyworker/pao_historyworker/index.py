"""The local history index: Claude Code exchanges in SQLite with an FTS5 table.

One row per exchange in ``exchanges`` and ``exchanges_fts`` (same rowid), and in
``vectors`` when the ``embeddings`` extra is installed; one row per transcript file
in ``files`` recording how far it was read. Re-indexing reads
only new or grown files: a grown file is re-read from the start of its last
exchange (the reply may have been appended since), a shrunk or replaced file from
the beginning.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import time
from stat import S_ISREG
from pathlib import Path
from typing import TYPE_CHECKING, Callable, ContextManager, Iterable

import attrs

from pao_embeddings import model as embeddings
from pao_embeddings.similar import retrieval_mode
from pao_historyworker.meta import bump_generation, meta_value
from pao_historyworker.vectors import RECIPE, EmbedReport, embed_missing

if TYPE_CHECKING:
    from pao_historyworker.transcripts import Exchange

SCHEMA_VERSION = "1"
TOKENIZER = "porter unicode61 remove_diacritics 2"

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, inode INTEGER NOT NULL,
    consumed INTEGER NOT NULL, resume INTEGER NOT NULL, lines INTEGER NOT NULL, malformed INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS exchanges (
    rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, file TEXT NOT NULL, start_offset INTEGER NOT NULL,
    session_id TEXT NOT NULL, project TEXT NOT NULL, cwd TEXT NOT NULL, git_branch TEXT NOT NULL, timestamp TEXT,
    uuids TEXT NOT NULL, prompt TEXT NOT NULL, reply TEXT NOT NULL, tools TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS exchanges_file ON exchanges(file, start_offset);
CREATE INDEX IF NOT EXISTS exchanges_session ON exchanges(session_id, start_offset);
CREATE VIRTUAL TABLE IF NOT EXISTS exchanges_fts USING fts5(prompt, reply, tools, context, tokenize='{TOKENIZER}');
CREATE VIRTUAL TABLE IF NOT EXISTS exchanges_vocab USING fts5vocab(exchanges_fts, 'row');
CREATE TABLE IF NOT EXISTS vectors (rowid INTEGER PRIMARY KEY, vector BLOB NOT NULL);
CREATE TRIGGER IF NOT EXISTS exchanges_drop_vector AFTER DELETE ON exchanges
    BEGIN DELETE FROM vectors WHERE rowid = old.rowid; END;
"""


class HistoryIndexError(Exception):
    """The index is missing or unusable (a one-line reason)."""


@attrs.frozen
class IndexReport:
    """What one ``index`` run did."""

    files_seen: int
    files_read: int
    exchanges_added: int
    lines_read: int
    malformed_lines: int
    files_removed: int
    elapsed_s: float
    exchanges_embedded: int = 0
    """Vectors computed (0 when the ``embeddings`` extra is not installed)."""
    embed_s: float = 0.0


def connect(path: Path, *, create: bool = False) -> sqlite3.Connection:
    """Open the index (creating it when ``create``), with a busy timeout for concurrent runs."""
    if not create and not path.exists():
        raise HistoryIndexError(f"no history index at {path}: run 'pao history index' first")
    if create:  # every indexed conversation: the owner's alone (SQLite's -wal/-shm copy the mode)
        from pao_core.files import private_file

        private_file(path, "-wal", "-shm")
    try:
        conn = sqlite3.connect(path, timeout=10.0, check_same_thread=False)
    except sqlite3.Error as exc:
        raise HistoryIndexError(f"cannot open the history index {path}: {exc}") from None
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA cache_size=-32000")  # 32 MB: a query reads posting lists of several terms
        conn.execute("PRAGMA mmap_size=268435456")
        if create:
            conn.executescript(_SCHEMA)
            conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('schema', ?)", (SCHEMA_VERSION,))
            conn.commit()
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise HistoryIndexError(f"{path}: not a usable history index ({exc}); remove it and run 'pao history index'") from None
    if not version or version[0] != SCHEMA_VERSION:
        conn.close()
        raise HistoryIndexError(f"{path}: not a pao history index of schema {SCHEMA_VERSION}")
    return conn


def path_key(path: str) -> str:
    """Claude Code's folder name for a project path: every non-alphanumeric character becomes ``-``."""
    return re.sub(r"[^A-Za-z0-9]", "-", path)


def project_path(folder_name: str, cwd: str) -> str:
    """The project path of a transcript folder: the session's cwd when it is the project
    itself, else the longest parent of it that names the folder, else the folder name."""
    candidate = cwd.rstrip("/")
    while candidate:
        if path_key(candidate) == folder_name:
            return candidate
        candidate = os.path.dirname(candidate) if candidate != "/" else ""
    return folder_name


def context_text(exchange: Exchange) -> str:
    """The searchable context of an exchange: project name and branch."""
    project = os.path.basename(exchange.cwd.rstrip("/"))
    return f"{project} {exchange.git_branch}".strip()


Stamp = tuple[int, int, int]
"""A transcript file's size, mtime (ns) and inode: changed when any of them is."""


def transcript_files(root: Path) -> dict[str, Stamp]:
    """``<root>/<project-key>/<session>.jsonl`` (Claude Code's layout; a file may be given
    too), each with its :data:`Stamp`, keyed by path under the resolved root.

    One ``scandir`` per folder and one ``stat`` per file, nothing else: this runs before
    every search (``pao_historyworker.fresh``), over thousands of transcripts.
    """
    base = os.path.realpath(root)
    if os.path.isfile(base):
        stat = os.stat(base)
        return {base: (stat.st_size, stat.st_mtime_ns, stat.st_ino)}
    found: dict[str, Stamp] = {}
    with os.scandir(base) as projects:
        folders = [entry.path for entry in projects if not entry.name.startswith(".") and entry.is_dir()]
    for folder in sorted(folders):
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    name = entry.name
                    if not name.endswith(".jsonl") or name.startswith("."):
                        continue
                    try:
                        stat = entry.stat()
                    except OSError:  # deleted since the listing
                        continue
                    if S_ISREG(stat.st_mode):
                        found[entry.path] = (stat.st_size, stat.st_mtime_ns, stat.st_ino)
        except OSError:
            continue
    return found


def _prefix(root: Path) -> str:
    return os.path.realpath(root) + (os.sep if root.is_dir() else "")


def up_to_date(conn: sqlite3.Connection, root: Path, present: dict[str, Stamp]) -> bool:
    """Whether the index holds every transcript of ``present`` (:func:`transcript_files` of
    ``root``) as it is, and no other under ``root``."""
    known = {path: (size, mtime, inode) for path, size, mtime, inode in conn.execute("SELECT path, size, mtime_ns, inode FROM files")}
    if any(known.get(path) != stamp for path, stamp in present.items()):
        return False
    prefix = _prefix(root)
    return sum(1 for path in known if path.startswith(prefix)) == len(present)


@attrs.frozen
class Pending:
    """What the index lacks of a transcripts folder: files to (re)read, files gone."""

    changed: list[tuple[str, Stamp, tuple | None]]
    """(path, stamp, its ``files`` row or None), newest first."""
    gone: list[str]
    seen: int


def pending(conn: sqlite3.Connection, root: Path, present: dict[str, Stamp] | None = None) -> Pending:
    """Compare the ``files`` table with the folder (by size, mtime and inode), or with
    ``present``, a scan of it just made."""
    if not root.exists():
        raise HistoryIndexError(f"{root}: no such folder")
    present = transcript_files(root) if present is None else present
    known = {row[0]: row for row in conn.execute("SELECT path, size, mtime_ns, inode, consumed, resume, lines, malformed FROM files")}
    changed = []
    for key, stamp in present.items():
        row = known.get(key)
        if not (row and tuple(row[1:4]) == stamp):
            changed.append((key, stamp, row))
    changed.sort(key=lambda entry: entry[1][1], reverse=True)  # the latest sessions matter most
    prefix = _prefix(root)
    gone = [path for path in known if path.startswith(prefix) and path not in present]
    return Pending(changed, gone, len(present))


def _grown(row: tuple | None, stamp: Stamp) -> bool:
    return bool(row) and row[3] == stamp[2] and stamp[0] >= row[4]  # type: ignore[index]


def unread_bytes(stamp: Stamp, row: tuple | None) -> int:
    """How much of a changed transcript :func:`index_file` reads."""
    return stamp[0] - (row[5] if row and _grown(row, stamp) else 0)


def index_file(conn: sqlite3.Connection, key: str, stamp: Stamp, row: tuple | None) -> tuple[int, int, int] | None:
    """Read one new or grown transcript into the index (a grown one from its last
    exchange on): ``(exchanges, lines, malformed lines)``, or None when it is unreadable."""
    grown = _grown(row, stamp)
    start, counted, prior_lines, prior_malformed = (row[5], row[4], row[6], row[7]) if grown and row else (0, 0, 0, 0)
    from pao_historyworker.transcripts import read_exchanges  # the transcripts' parser: not for a search (pao brief)

    try:
        result = read_exchanges(Path(key), start, counted)
    except OSError:
        return None
    with conn:
        _delete_from(conn, key, start)
        added = _insert(conn, key, result.exchanges)
        conn.execute(
            "INSERT OR REPLACE INTO files(path, size, mtime_ns, inode, consumed, resume, lines, malformed)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (key, *stamp, result.consumed, result.resume, prior_lines + result.lines, prior_malformed + result.malformed),
        )
    return added, result.lines, result.malformed


def forget_files(conn: sqlite3.Connection, paths: Iterable[str]) -> int:
    """Drop transcripts that are gone, with their exchanges."""
    count = 0
    with conn:
        for path in paths:
            _delete_from(conn, path, 0)
            conn.execute("DELETE FROM files WHERE path = ?", (path,))
            count += 1
    return count


def indexed_roots(conn: sqlite3.Connection) -> list[Path]:
    """The transcript folders (or files) this index was built from."""
    return [Path(root) for root in json.loads(meta_value(conn, "roots") or "[]")]


def remember_root(conn: sqlite3.Connection, root: Path) -> None:
    roots = [str(path) for path in indexed_roots(conn)]
    key = os.path.realpath(root)
    if key not in roots:
        with conn:
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('roots', ?)", (json.dumps([*roots, key]),))


def finish(conn: sqlite3.Connection, changed: bool = True) -> None:
    """The stored count (searches read it: count(*) scans the table) and, after a change,
    a new generation (searching processes reload what they cached)."""
    with conn:
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('exchanges', (SELECT count(*) FROM exchanges))")
    if changed:
        bump_generation(conn)


def _delete_from(conn: sqlite3.Connection, file: str, offset: int) -> None:
    rows = [r[0] for r in conn.execute("SELECT rowid FROM exchanges WHERE file = ? AND start_offset >= ?", (file, offset))]
    conn.executemany("DELETE FROM exchanges_fts WHERE rowid = ?", ((r,) for r in rows))
    conn.executemany("DELETE FROM exchanges WHERE rowid = ?", ((r,) for r in rows))


def _insert(conn: sqlite3.Connection, file: str, exchanges: Iterable[Exchange]) -> int:
    count = 0
    for exchange in exchanges:
        conn.execute("DELETE FROM exchanges_fts WHERE rowid IN (SELECT rowid FROM exchanges WHERE id = ?)", (exchange.id,))
        conn.execute("DELETE FROM exchanges WHERE id = ?", (exchange.id,))
        cursor = conn.execute(
            "INSERT INTO exchanges(id, file, start_offset, session_id, project, cwd, git_branch, timestamp, uuids,"
            " prompt, reply, tools) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                exchange.id,
                file,
                exchange.start_offset,
                exchange.session_id,
                project_path(Path(file).parent.name, exchange.cwd),
                exchange.cwd,
                exchange.git_branch,
                exchange.timestamp.isoformat() if exchange.timestamp else None,
                json.dumps(exchange.uuids),
                exchange.prompt,
                exchange.reply,
                exchange.tools,
            ),
        )
        conn.execute(
            "INSERT INTO exchanges_fts(rowid, prompt, reply, tools, context) VALUES (?, ?, ?, ?, ?)",
            (cursor.lastrowid, exchange.prompt, exchange.reply, exchange.tools, context_text(exchange)),
        )
        count += 1
    return count


def index_transcripts(
    conn: sqlite3.Connection,
    root: Path,
    *,
    embed: bool = True,
    progress: Callable[[int, int], None] | None = None,
    on_file: Callable[[int, int], None] | None = None,
    guard: ContextManager[object] | None = None,
) -> IndexReport:
    """Bring the index up to date with the transcripts under ``root`` (incrementally).

    ``guard`` is held while transcripts are read (the indexing lock, ``fresh.lock_for``).
    With ``embed`` and the ``embeddings`` extra installed, exchanges without a vector get
    one; ``progress(done, total)`` is called as they are embedded, ``on_file(read, total)`` as
    each new or grown transcript file is read.
    """
    started = time.monotonic()
    with guard or contextlib.nullcontext():
        todo = pending(conn, root)
        remember_root(conn, root)
        read = added = lines = malformed = 0
        for key, stat, row in todo.changed:
            done = index_file(conn, key, stat, row)
            if done is None:
                continue
            read += 1
            added, lines, malformed = added + done[0], lines + done[1], malformed + done[2]
            if on_file:
                on_file(read, len(todo.changed))
        removed = forget_files(conn, todo.gone)
        finish(conn, changed=bool(read or removed))
    embedded = _embed(conn, progress) if embed else None
    return IndexReport(
        todo.seen, read, added, lines, malformed, removed, round(time.monotonic() - started, 3),
        embedded.embedded if embedded else 0, embedded.elapsed_s if embedded else 0.0,
    )


def _embed(conn: sqlite3.Connection, progress: Callable[[int, int], None] | None) -> EmbedReport | None:
    if not embeddings.available():
        return None
    return embed_missing(conn, progress)


def stats(conn: sqlite3.Connection, path: Path, semantic: bool = True) -> dict[str, object]:
    """Counts for ``pao history stats`` and the server's ``stats`` method."""
    files, lines, malformed = conn.execute("SELECT count(*), COALESCE(sum(lines), 0), COALESCE(sum(malformed), 0) FROM files").fetchone()
    exchanges, sessions, projects, first, last = conn.execute(
        "SELECT count(*), count(DISTINCT session_id), count(DISTINCT project), min(timestamp), max(timestamp) FROM exchanges"
    ).fetchone()
    return {
        "index": str(path),
        "files": files,
        "sessions": sessions,
        "projects": projects,
        "exchanges": exchanges,
        "lines": lines,
        "malformed_lines": malformed,
        "first": first,
        "last": last,
        "bytes": path.stat().st_size if path.exists() else 0,
        **vector_stats(conn, exchanges, semantic),
    }


def vector_stats(conn: sqlite3.Connection, exchanges: int, semantic: bool = True) -> dict[str, object]:
    """Whether searches of this index use vectors, and why not."""
    recipe = meta_value(conn, "vectors_recipe")
    vectors = conn.execute("SELECT count(*) FROM vectors").fetchone()[0] if recipe == RECIPE else 0
    return {"vectors": vectors, "vector_model": recipe,
            "semantic_search": retrieval_mode(enabled=semantic, vectors=vectors, items=exchanges, what="exchanges",
                                              refresh="run 'pao history index --embed'")}
