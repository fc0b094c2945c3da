"""A large memory file synced in parts, each within the search's time, resumed by the next search.

A memory file over :data:`WHOLE_FILE_BYTES` is read from where the last search got to, one
part at a time, while the sync's deadline allows. Parts are sized from the rate this sync
measures (:class:`PartSizer`): a small first part, then what half the time left holds at
the pace of the previous part, so a slow or loaded machine makes smaller parts instead of
starting one that cannot finish; a part that runs out of time anyway is rolled back alone,
and the parts committed before it are reported as progress. Each part is its own write
transaction: what the part brought is added to the store (nothing is removed, so a
briefing keeps every fact it had), and the part's graph is kept in ``pao_memory_file_pending``
with how far the sync got. When the last part is in, one transaction does what a whole-file
sync does (:func:`pao_postgres.store.filesync.apply`): what the file dropped since its previous
complete sync (or an abandoned partial one) is removed, and the file's graph replaces the
previous one. A file that changes meanwhile starts again from its first line; what the
abandoned parts added counts as the file's, so the completed sync removes what is gone.
"""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import attrs

from pao_core.errors import PaoError
from pao_core.files import open_no_follow
from pao_postgres.errors import LongtermError
from pao_postgres.store.filegraph import (SYNC_TABLE, SyncReport, TornRead, added_part, as_json, from_json, lock_sync,
                                    read_rows, signature, sync_table)
from pao_postgres.mcpfile import ImportFileError, MemoryFile, parse_memory

if TYPE_CHECKING:
    import sqlalchemy as sa

    from pao_postgres.options import LongtermOptions
    from pao_postgres.store.longterm import LongtermStore

PENDING_TABLE = "pao_memory_file_pending"
WHOLE_FILE_BYTES = 1 << 20
"""A memory file up to this size (1 MiB) is synced whole, in one transaction; a larger one in parts."""
FIRST_PART_LINES = 200
"""Lines of a sync's first part, before it has measured this machine's pace."""
MIN_PART_LINES = 50
"""No part is smaller: when the measured pace says even this many will not fit, the sync stops."""
MAX_PART_LINES = 20_000
"""No part is larger (what one part reads into memory)."""
PART_SHARE = 0.5
"""A part is sized to take at most this share of the time left: twice as slow as measured still fits."""
PART_TARGET_S = 0.5
"""A part is sized to take at most this long (how long it holds the store's write lock)."""
FIRST_PART_S = 0.05
"""No first part starts with less time than this left."""
ABANDONED = ""
"""The signature of the parts of a version of the file that changed before its sync completed."""


@attrs.frozen
class Progress:
    """How far the sync of one version of the file got: ``lines`` of ``total``, up to byte ``offset``."""

    signature: str
    seq: int = 0
    offset: int = 0
    lines: int = 0
    total: int = 0


def pending_table(options: LongtermOptions) -> sa.Table:
    import sqlalchemy as sa  # loads sqlalchemy on use: start-up stays light

    metadata = sa.MetaData(schema=options.schema or None)
    return sa.Table(
        PENDING_TABLE, metadata,
        sa.Column("source", sa.Text, primary_key=True),
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("signature", sa.Text, nullable=False),
        sa.Column("end_offset", sa.BigInteger, nullable=False),
        sa.Column("lines", sa.Integer, nullable=False),
        sa.Column("total_lines", sa.Integer, nullable=False),
        sa.Column("graph", sa.Text, nullable=False),
    )


def progress(connection: sa.Connection, table: sa.Table, source: str) -> Progress | None:
    """The newest part of the version being synced (None: no sync in parts under way)."""
    import sqlalchemy as sa  # loads sqlalchemy on use: start-up stays light

    if not sa.inspect(connection).has_table(PENDING_TABLE, schema=table.schema):
        return None
    row = connection.execute(
        sa.select(table.c.signature, table.c.seq, table.c.end_offset, table.c.lines, table.c.total_lines)
        .where(table.c.source == source, table.c.signature != ABANDONED).order_by(table.c.seq.desc()).limit(1)
    ).first()
    return Progress(*row) if row else None


def count_lines(handle: int) -> int:
    """Lines of the open file (a last line without its newline counts)."""
    count, last = 0, b"\n"
    os.lseek(handle, 0, os.SEEK_SET)
    while block := os.read(handle, 1 << 20):
        count, last = count + block.count(b"\n"), block[-1:]
    return count + (last != b"\n")


@attrs.define
class PartSizer:
    """How many lines the next part may have, from the pace this sync measured on its previous part."""

    seconds_per_line: float | None = None

    def lines(self, deadline: float, remaining: int) -> int:
        """Lines of the next part (at most ``remaining``); 0 when the measured pace says none fits."""
        left = deadline - time.monotonic()
        if self.seconds_per_line is None:
            return min(FIRST_PART_LINES, remaining) if left >= FIRST_PART_S else 0
        fits = min(int(min(PART_TARGET_S, PART_SHARE * left) / self.seconds_per_line), MAX_PART_LINES)
        return min(fits, remaining) if fits >= min(MIN_PART_LINES, remaining) else 0

    def measured(self, lines: int, seconds: float) -> None:
        self.seconds_per_line = max(seconds, 1e-6) / max(lines, 1)


def sync_in_parts(store: LongtermStore, path: Path, source: str, current: str, deadline: float) -> SyncReport:
    """Sync the next parts of ``path`` (its signature ``current``) while ``deadline`` allows (see the module)."""

    try:
        fd = open_no_follow(path, os.O_RDONLY, follow=True, owned=False)
    except (OSError, PaoError) as exc:
        return SyncReport(source, note=f"memory file not synced ({exc}); searched the store as it was")
    added: dict[str, int] = {}
    sizer, stopped = PartSizer(), ""
    try:
        state, old = _resume(store, source, current, fd, deadline)
        with os.fdopen(os.dup(fd), "rb") as handle:
            handle.seek(state.offset)
            while state.lines < state.total and (count := sizer.lines(deadline, state.total - state.lines)):
                started = time.monotonic()
                memory, reached = _read_part(handle, fd, path, current, state, count)
                try:
                    moved = _add_part(store, source, state, added_part(old, memory), memory, reached, deadline, added)
                except LongtermError as exc:  # rolled back alone: the parts committed before it stay
                    stopped = f"; this search's last part was rolled back ({exc})"
                    break
                if moved is None:
                    return SyncReport(source, synced=bool(added), added=added)  # another process is at it
                sizer.measured(moved.lines - state.lines, time.monotonic() - started)
                state = moved
        if state.lines >= state.total:  # every part is in: the caller completes the sync (filesync.complete)
            return SyncReport(source, synced=True, added=added, complete=True)
    except TornRead as exc:
        return SyncReport(source, synced=bool(added), added=added,
                          note=f"memory file not synced ({exc}); searched the store as it was")
    finally:
        os.close(fd)
    return SyncReport(source, synced=bool(added), added=added, note=(
        f"memory file {path}: synced {state.lines:,} of {state.total:,} lines; the next search goes on "
        f"('pao memory sync' finishes it now){stopped}"))


def _read_part(handle: BinaryIO, fd: int, path: Path, current: str, state: Progress,
               count: int) -> tuple[MemoryFile, tuple[int, int]]:
    """The next ``count`` lines of the file as a graph, and how far they reach (byte offset, lines);
    :class:`TornRead` when the file changed or the part does not parse."""
    chunk = b"".join(itertools.islice(handle, count))
    if signature(os.fstat(fd)) != current or signature(os.stat(path)) != current:
        raise TornRead(f"{path}: changed while it was read")
    try:
        memory = parse_memory(chunk, str(path), cut=True, first_line=state.lines + 1)
    except ImportFileError as exc:
        raise TornRead(f"half-written or invalid: {exc}") from None
    lines = state.lines + chunk.count(b"\n") + (bool(chunk) and not chunk.endswith(b"\n"))
    return memory, (handle.tell(), min(lines, state.total))


def _resume(store: LongtermStore, source: str, current: str, fd: int, deadline: float) -> tuple[Progress, MemoryFile]:
    """Where the sync of this version got to (the parts of an earlier version marked abandoned),
    and the file's graph as of its previous complete sync."""
    import sqlalchemy as sa  # loads sqlalchemy on use: start-up stays light

    from pao_postgres.store.schema import create_schema  # a first sync: the schema may be missing

    table, previous = pending_table(store.options), sync_table(store.options)
    with store.write(deadline) as connection:
        create_schema(connection, store.tables)
        previous.create(connection, checkfirst=True)
        table.create(connection, checkfirst=True)
        old = from_json(connection.execute(sa.select(previous.c.graph).where(previous.c.source == source)).scalar())
        found = progress(connection, table, source)
        if found is not None and found.signature == current:
            return found, old
        connection.execute(sa.update(table).where(table.c.source == source).values(signature=ABANDONED))
        last = connection.execute(sa.select(sa.func.max(table.c.seq)).where(table.c.source == source)).scalar()
    return Progress(current, seq=last or 0, total=count_lines(fd)), old


def _add_part(store: LongtermStore, source: str, state: Progress, new: MemoryFile, memory: MemoryFile,
              reached: tuple[int, int], deadline: float, added: dict[str, int]) -> Progress | None:
    """One part in one transaction: ``new`` (what it brings) added, the part's graph ``memory`` kept
    with how far it ``reached`` (byte offset, lines); None when another process moved the sync on
    meanwhile (it goes on from there)."""
    import sqlalchemy as sa  # loads sqlalchemy on use: start-up stays light

    table, (offset, lines) = pending_table(store.options), reached
    with store.write(deadline) as connection:
        lock_sync(store, connection)
        if progress(connection, table, source) != (state if state.offset else None):
            return None
        counts = attrs.asdict(store.import_into(connection, new))
        for key, value in counts.items():
            added[key] = added.get(key, 0) + value
        part = attrs.evolve(state, seq=state.seq + 1, offset=offset, lines=lines)
        connection.execute(sa.insert(table), {"source": source, "seq": part.seq, "signature": part.signature,
                                              "end_offset": offset, "lines": lines, "total_lines": part.total,
                                              "graph": as_json(memory)})
    return part


def abandoned_graphs(connection: sa.Connection, options: LongtermOptions, source: str) -> list[str]:
    """The graphs of every part kept for ``source`` (a completed sync folds them into the previous graph)."""
    import sqlalchemy as sa  # loads sqlalchemy on use: start-up stays light

    table = pending_table(options)
    if not sa.inspect(connection).has_table(PENDING_TABLE, schema=table.schema):
        return []
    found = list(connection.execute(sa.select(table.c.graph).where(table.c.source == source)).scalars())
    connection.execute(sa.delete(table).where(table.c.source == source))
    return found


def describe(options: LongtermOptions, home: Path, path: Path, deadline: float) -> str:
    """One line for ``pao doctor`` and ``pao memory stats``: how far the memory file's sync got."""

    try:
        current = signature(os.stat(path))
    except OSError as exc:
        return f"memory file {path}: {exc.strerror}"
    source = str(path.resolve())
    done = read_rows(options, home, SYNC_TABLE, "SELECT signature FROM {table} WHERE source = :source",
                     {"source": source}, deadline)
    if done and done[0][0] == current:
        return f"memory file {path}: synced"
    parts = read_rows(options, home, PENDING_TABLE, "SELECT signature, lines, total_lines FROM {table} WHERE "
                      "source = :source AND signature != '' ORDER BY seq DESC LIMIT 1", {"source": source}, deadline)
    if parts and parts[0][0] == current:
        return f"memory file {path}: synced {parts[0][1]:,} of {parts[0][2]:,} lines (the next search goes on)"
    return f"memory file {path}: changed since its last sync (the next search syncs it)"
