"""Bounds on what the memory file brings, on both dialects (issue 28, item 4).

A memory file over 1 MiB is synced in parts within each search's time and resumed by the
next one, never emptying the store meanwhile; an observation over the size limit is cut;
a line nested too deep is an error for that line. Real files, the real store, the real CLI.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from pao_postgres.store.filebatches import FIRST_PART_LINES, WHOLE_FILE_BYTES, describe
from pao_postgres.store.filesync import sync
from pao_postgres.items import MAX_OBSERVATION_CHARS
from pao_postgres.options import LongtermOptions

LINES = 40_000
"""More lines than a search's share of time syncs on a fast machine (about 15,000 a second here, quiet)."""
SHARE_S = 1.5
"""A search's share of its time for the sync: long enough for a part on a loaded machine."""
USER_FACT = "the billing service keeps user sessions in valkey"


def _options(longterm) -> LongtermOptions:
    return LongtermOptions(url=longterm.url or "", schema=longterm.schema or "", semantic=False)


def _write(path: Path, first: int, count: int, extra: str = "") -> None:
    lines = [json.dumps({"type": "entity", "name": f"service-{n}", "entityType": "service",
                         "observations": [f"service {n} is deployed from the monorepo by the release train {n % 7}"]})
             for n in range(first, first + count)]
    path.write_text("\n".join(lines) + "\n" + extra)
    stamp = time.time() - 1
    os.utime(path, (stamp, stamp))


def _names(longterm, tmp_path: Path) -> set[str]:
    out = tmp_path / f"export-{time.monotonic_ns()}.jsonl"
    code, _, err = longterm.pao("memory", "export", str(out))
    assert code == 0, err
    return {json.loads(line)["name"] for line in out.read_text().splitlines() if '"entity"' in line}


def _synced(note: str | None) -> int:
    """The lines a sync that did not complete says it synced (a quiet machine may get every line in, and
    leave the sync's completion to the next search)."""
    if note and "every line synced, the sync not completed" in note:
        return LINES
    found = re.search(r"synced ([\d,]+) of ([\d,]+) lines", note or "")
    assert found, note
    assert int(found[2].replace(",", "")) == LINES
    return int(found[1].replace(",", ""))


def test_a_large_file_is_synced_in_parts_resumed_and_completed_atomically(longterm, tmp_path: Path) -> None:
    memory = tmp_path / "memory.jsonl"
    _write(memory, 0, LINES)
    assert memory.stat().st_size > WHOLE_FILE_BYTES
    longterm.configure(f'memory_file = "{memory}"\nsemantic = false\n')
    assert longterm.pao("memory", "add", "billing", USER_FACT)[0] == 0
    options, home = _options(longterm), longterm.home
    first = sync(options, home, memory, time.monotonic() + SHARE_S)
    done = _synced(first.note)
    assert FIRST_PART_LINES <= done < LINES and first.synced
    assert f"synced {done:,} of {LINES:,} lines" in describe(options, home, memory, time.monotonic() + 10)
    stats = longterm.pao_json("memory", "stats")
    assert stats["memory_file"].endswith(f"synced {done:,} of {LINES:,} lines (the next search goes on)")
    names = _names(longterm, tmp_path)
    assert "billing" in names and len(names) == done + 1  # the user's fact stays while the file comes in
    resumed = sync(options, home, memory, time.monotonic() + SHARE_S)
    assert resumed.synced and (resumed.note is None or _synced(resumed.note) > done)  # went on from where it got to

    _write(memory, 1, LINES)  # the file changed mid-sync: service-0 is gone, service-LINES is new
    restarted = sync(options, home, memory, time.monotonic() + SHARE_S)
    if restarted.note:  # not done yet: only a completed sync removes
        assert _synced(restarted.note) and "service-0" in _names(longterm, tmp_path)
    final = sync(options, home, memory, time.monotonic() + 120)
    assert final.note is None and (final.synced or restarted.note is None)  # completed now, or already by then
    names = _names(longterm, tmp_path)
    assert names == {f"service-{n}" for n in range(1, LINES + 1)} | {"billing"}
    assert describe(options, home, memory, time.monotonic() + 10) == f"memory file {memory}: synced"
    assert longterm.pao_json("memory", "search", "billing sessions")["items"][0]["text"] == USER_FACT


def test_a_brief_on_a_large_file_keeps_the_user_s_facts(longterm, tmp_path: Path) -> None:
    memory = tmp_path / "memory.jsonl"
    _write(memory, 0, LINES)
    longterm.configure(f'memory_file = "{memory}"\nsemantic = false\n')
    assert longterm.pao("memory", "add", "billing", USER_FACT)[0] == 0
    briefing = longterm.pao_json("brief", "where does billing keep user sessions")
    assert any(item["text"] == USER_FACT for item in briefing["items"])
    note = briefing["backends"]["longterm"]["note"]
    assert "lines; the next search goes on" in (note or "")
    assert _synced(note) >= FIRST_PART_LINES  # the brief's share of its time brought a part in


@contextlib.contextmanager
def _sync_lock_taken_after_a_part(longterm) -> Iterator[threading.Event]:
    """Another writer takes the sync's lock (SQLite's write lock, PostgreSQL's advisory lock) as
    soon as a part is committed, and holds it until the body is done; the event: it took it."""
    taken, done = threading.Event(), threading.Event()

    def hold() -> None:
        if longterm.url:
            import psycopg

            connection = psycopg.connect(longterm.url, autocommit=True)
            lock = ["BEGIN", "SELECT pg_advisory_xact_lock(hashtext('pao_memory_file_sync'))"]
        else:
            connection = sqlite3.connect(_options(longterm).sqlite_file(longterm.home), isolation_level=None)
            lock = ["BEGIN IMMEDIATE"]
        try:
            while not done.is_set() and not _pending_parts(longterm, connection):
                time.sleep(0.002)
            for statement in lock:
                connection.execute(statement)
            taken.set()
            done.wait()
            connection.execute("ROLLBACK")  # nothing written: the lock was all it wanted
        finally:
            connection.close()

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    try:
        yield taken
    finally:
        done.set()
        holder.join()


def _pending_parts(longterm, connection) -> int:
    table = f"{longterm.schema}.pao_memory_file_pending" if longterm.url else "pao_memory_file_pending"
    exists = ("SELECT to_regclass(%s) IS NOT NULL" if longterm.url else "SELECT count(*) FROM sqlite_master WHERE name = ?")
    if not connection.execute(exists, (table,)).fetchone()[0]:
        return 0
    return connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def test_a_part_cut_short_keeps_the_parts_committed_before_it(longterm, tmp_path: Path) -> None:
    """A part that cannot finish (here: another writer holds the lock) is rolled back alone; the
    search reports the lines already in, and the next search goes on from there."""
    memory = tmp_path / "memory.jsonl"
    _write(memory, 0, LINES)
    longterm.configure(f'memory_file = "{memory}"\nsemantic = false\n')
    assert longterm.pao("memory", "add", "billing", USER_FACT)[0] == 0
    options, home = _options(longterm), longterm.home
    with _sync_lock_taken_after_a_part(longterm) as taken:
        report = sync(options, home, memory, time.monotonic() + 3)
    assert taken.is_set() and report.synced
    done = _synced(report.note)
    assert FIRST_PART_LINES <= done < LINES and "this search's last part was rolled back" in report.note
    assert len(_names(longterm, tmp_path)) == done + 1  # exactly the committed parts, and the user's fact
    resumed = sync(options, home, memory, time.monotonic() + SHARE_S)
    assert resumed.note is None or _synced(resumed.note) > done


@pytest.mark.parametrize("size", [1_000_000, 3_000_000], ids=["whole-file", "in-parts"])
def test_an_observation_over_the_limit_arrives_cut(longterm, tmp_path: Path, size: int) -> None:
    memory = tmp_path / "memory.jsonl"
    _write(memory, 0, 20, extra=json.dumps({"type": "entity", "name": "huge", "entityType": "blob",
                                            "observations": ["token " + "x" * size]}) + "\n")
    longterm.configure(f'memory_file = "{memory}"\nsemantic = false\n')
    assert sync(_options(longterm), longterm.home, memory, time.monotonic() + 120).synced
    out = tmp_path / "export.jsonl"
    assert longterm.pao("memory", "export", str(out))[0] == 0
    huge = next(json.loads(line) for line in out.read_text().splitlines() if '"huge"' in line)
    assert len(huge["observations"][0]) == MAX_OBSERVATION_CHARS and huge["observations"][0].endswith("\u2026")
    started = time.monotonic()
    assert longterm.pao("brief", "token")[0] == 0
    assert time.monotonic() - started < 10


def test_a_line_nested_too_deep_is_an_error_for_that_line(longterm, tmp_path: Path) -> None:
    memory = tmp_path / "memory.jsonl"
    _write(memory, 0, 3)
    longterm.configure(f'memory_file = "{memory}"\nsemantic = false\n')
    assert sync(_options(longterm), longterm.home, memory).synced
    _write(memory, 0, 3, extra='{"type": "entity", "name": "deep", "observations": ' + "[" * 100_000 + "]" * 100_000 + "}")
    code, _, err = longterm.pao("memory", "sync")
    assert code == 1 and err.count("\n") == 1
    assert f"{memory}:4: not valid JSON: nested deeper than 64 levels" in err
    assert _names(longterm, tmp_path) == {"service-0", "service-1", "service-2"}  # nothing lost
