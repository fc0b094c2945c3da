"""Reading the embedded SQLite store with the standard library's ``sqlite3``.

A search runs at every spawn, and importing SQLAlchemy costs more than the search
itself (about 150 ms of CPU). The ranked search on SQLite is plain SQL already, so
it runs on a ``sqlite3`` connection of its own; writes (init, import, add), the
statistics and the ``original`` mode keep SQLAlchemy.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import math
import sqlite3
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from pao_postgres.errors import LongtermError, reason, remaining

Rows = Callable[[str, Mapping[str, Any]], list[Any]]
"""Runs one statement (``:name`` parameters) and returns its rows, with named fields."""


def apply_deadline(connection: sqlite3.Connection, deadline: float) -> None:
    """Interrupt statements past ``deadline``; wait for a writer's lock at most until then."""
    connection.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 1000)
    connection.execute(f"PRAGMA busy_timeout = {max(1, math.ceil(remaining(deadline) * 1000))}")


@contextlib.contextmanager
def file_reading(path: Path, deadline: float) -> Iterator[Rows]:
    """One read transaction on the existing file ``path``, bounded by ``deadline``."""
    remaining(deadline)
    try:
        # mode=rw: a search never creates the file (the writers do, with the schema).
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=rw", uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        raise LongtermError(f"{reason(exc)}: {path}") from None
    try:
        connection.row_factory = _named_row
        apply_deadline(connection, deadline)
        connection.execute("BEGIN")  # one snapshot for the term weights and the ranked query
        yield lambda sql, params: connection.execute(sql, params).fetchall()
    except sqlite3.Error as exc:
        raise LongtermError(reason(exc)) from None
    finally:
        connection.close()


def _named_row(cursor: sqlite3.Cursor, row: tuple) -> Any:
    return _row_type(tuple(column[0] for column in cursor.description))._make(row)


@functools.lru_cache(maxsize=32)
def _row_type(fields: tuple[str, ...]) -> Any:
    return collections.namedtuple("Row", fields, rename=True)
