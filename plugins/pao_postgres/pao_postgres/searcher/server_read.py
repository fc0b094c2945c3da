"""Reading a PostgreSQL store with psycopg alone: the search path of a server store.

A search runs at every spawn, in a new process. SQLAlchemy (its import, an engine, a
pool) costs that process more CPU than the search itself, even at a million
observations, and the searches are plain SQL already. So they run here on psycopg
directly: connections kept open between searches (a few idle ones per URL and
process), each search one read transaction whose settings (statement timeout from the
caller's deadline, no sequential scans, no JIT, generic plans) travel with its first
statement in one round trip. Writes, statistics and the ``original`` mode keep
SQLAlchemy (:mod:`pao_postgres.store.engine`).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import threading
import urllib.parse
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from pao_core.sanitize import mask_url
from pao_postgres.errors import LongtermError, reason, remaining

if TYPE_CHECKING:
    import psycopg

    from pao_postgres.options import LongtermOptions
    from pao_postgres.searcher.sqlite_read import Rows

CONNECT_TIMEOUT_CAP = 10.0
SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")

# Searches are index lookups: a sequential scan of a large table is never the plan we
# want, whatever a LIMIT makes it look like; JIT-compiling a millisecond query costs
# hundreds of milliseconds; and a search statement's plan does not depend on the topic
# (its terms reach the server as arrays), so a prepared one is planned once per connection.
# Transaction-local, so a kept connection keeps its defaults.
POSTGRES_SETTINGS = (
    "SELECT set_config('statement_timeout', %(ms)s, true), set_config('enable_seqscan', %(seq)s, true),"
    " set_config('jit', 'off', true), set_config('plan_cache_mode', %(plans)s, true)"
)


def postgres_settings(deadline: float, write: bool) -> dict[str, str]:
    """Parameters of :data:`POSTGRES_SETTINGS`: the time left as ``statement_timeout``."""
    return {
        "ms": str(max(1, math.ceil(remaining(deadline) * 1000))),
        "seq": "on" if write else "off",
        "plans": "auto" if write else "force_generic_plan",
    }


def libpq_url(url: str) -> str:
    """``url`` as libpq reads it (``postgresql+psycopg://`` is SQLAlchemy's spelling)."""
    text = url.strip()
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    if not scheme:
        # never echoed: without a scheme, "user:password@host" is not recognisable as a URL to mask
        raise LongtermError("the longterm store URL is not a PostgreSQL URL "
                            "(expected postgresql://user@host:port/db)")
    if scheme not in SCHEMES:
        raise LongtermError(f"unsupported URL scheme {scheme!r}: use postgresql:// (psycopg 3)")
    return "postgresql://" + text.split("://", 1)[1]


def store_key(options: LongtermOptions) -> str:
    """The store's name for per-process caches (the vectors' matrix): URL, password masked, and schema."""
    parts = urllib.parse.urlsplit(libpq_url(options.url))
    return f"{mask_url(parts._replace(query='', fragment='').geturl())}#{options.schema}"


_idle: dict[str, list[psycopg.Connection]] = {}
_idle_lock = threading.Lock()
_inherited: list[psycopg.Connection] = []


def _after_fork_in_child() -> None:
    """A forked child (``pao spawn`` gathers in one) never uses its parent's connections: one
    socket read by two processes mixes their answers. They are held, not closed: closing
    would end the parent's session on the server."""
    global _idle_lock
    _idle_lock = threading.Lock()
    _inherited.extend(c for kept in _idle.values() for c in kept)
    _idle.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _connect(url: str, deadline: float) -> psycopg.Connection:
    import psycopg  # loads psycopg on use: start-up stays light

    # connect_timeout: libpq rounds it up to 2 s at least
    seconds = max(2, math.ceil(min(remaining(deadline), CONNECT_TIMEOUT_CAP)))
    try:
        return psycopg.connect(url, connect_timeout=seconds, application_name="pao")
    except psycopg.Error as exc:
        raise LongtermError(reason(exc)) from None


def _take(url: str, deadline: float) -> tuple[psycopg.Connection, bool]:
    """A connection to ``url`` (a kept one when there is one) and whether it was kept."""
    with _idle_lock:
        kept = _idle.get(url, [])
        while kept:
            connection = kept.pop()
            if not connection.closed:
                return connection, True
    return _connect(url, deadline), False


def _give_back(url: str, connection: psycopg.Connection, keep: int) -> None:
    import psycopg  # loads psycopg on use: start-up stays light

    healthy = not connection.closed and connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    with _idle_lock:
        kept = _idle.setdefault(url, [])
        if healthy and len(kept) < keep:
            kept.append(connection)
            return
    connection.close()


def close_all() -> None:
    """Close every kept connection of this process (tests, forks)."""
    with _idle_lock:
        connections = [c for kept in _idle.values() for c in kept]
        _idle.clear()
    _closed(connections)


def close_kept(options: LongtermOptions) -> None:
    """Close the connections kept to the store of ``options`` (its backend's close step)."""
    with _idle_lock:
        connections = _idle.pop(libpq_url(options.url), [])
    _closed(connections)


def _closed(connections: list[psycopg.Connection]) -> None:
    for connection in connections:
        with contextlib.suppress(Exception):
            connection.close()


_NAMED = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


def _pyformat(sql: str) -> str:
    """``:name`` parameters (the dialect-neutral spelling of the shared search code) as psycopg's
    ``%(name)s``; ``::`` casts and ``%(name)s`` stay as they are."""
    return _NAMED.sub(r"%(\1)s", sql)


class _Reader:
    """One read transaction's statements on one connection; the first carries the settings."""

    def __init__(self, url: str, deadline: float) -> None:
        self.url, self.deadline = url, deadline
        self.connection, self.kept = _take(url, deadline)
        self.started = False

    def __call__(self, sql: str, params: Mapping[str, Any]) -> list[Any]:
        import psycopg  # loads psycopg on use: start-up stays light

        if self.started:
            return self._run(sql, params)
        try:
            return self._first(sql, params)
        except psycopg.OperationalError:
            if not (self.kept and self.connection.closed):
                raise
            # a kept connection the server has closed since (a restart): once more on a new one
            self.connection, self.kept = _connect(self.url, self.deadline), False
            return self._first(sql, params)

    def _first(self, sql: str, params: Mapping[str, Any]) -> list[Any]:
        # the transaction's settings and its first statement leave together: one round trip
        with self.connection.pipeline():
            self.connection.execute(POSTGRES_SETTINGS, postgres_settings(self.deadline, write=False))
            cursor = self._cursor(sql, params)
        self.started = True
        return cursor.fetchall()

    def _run(self, sql: str, params: Mapping[str, Any]) -> list[Any]:
        return self._cursor(sql, params).fetchall()

    def _cursor(self, sql: str, params: Mapping[str, Any]) -> Any:
        from psycopg.rows import namedtuple_row  # loads psycopg on use: start-up stays light

        # binary results: vectors (bytea) arrive as they are stored, not as hex text to decode
        cursor = self.connection.cursor(row_factory=namedtuple_row, binary=True)
        cursor.execute(_pyformat(sql), params)
        return cursor


@contextlib.contextmanager
def server_reading(options: LongtermOptions, deadline: float) -> Iterator[Rows]:
    """One read transaction on the store's server, bounded by ``deadline``: yields a
    :data:`~pao_postgres.searcher.sqlite_read.Rows` (``:name`` or ``%(name)s`` parameters, rows
    with named fields). Every error leaves as one :class:`LongtermError` line."""
    import psycopg  # loads psycopg on use: start-up stays light

    reader = _Reader(libpq_url(options.url), deadline)
    try:
        yield reader
        reader.connection.commit()
    except psycopg.Error as exc:
        raise LongtermError(reason(exc)) from None
    finally:
        if reader.connection.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            with contextlib.suppress(psycopg.Error):
                reader.connection.rollback()
        _give_back(reader.url, reader.connection, options.pool_size)
