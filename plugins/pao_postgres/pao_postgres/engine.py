"""Engines: one per store per process, created on first use; connections under a deadline.

PostgreSQL: SQLAlchemy's small queue pool over psycopg 3, ``connect_timeout`` and a
per-transaction ``statement_timeout`` derived from the caller's deadline. SQLite: the
embedded file, with a progress handler that interrupts a statement at the deadline.
Every error leaves here as a :class:`LongtermError` with one line and no password.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from pathlib import Path
from typing import Iterator

import sqlalchemy as sa

from pao_core.config import mask_url
from pao_core.errors import PaoError

CONNECT_TIMEOUT_CAP = 10.0
WRITE_DEADLINE = 600.0
"""Seconds granted to CLI writes (``init``, ``import``, ``add``)."""

_engines: dict[tuple, sa.Engine] = {}
_engines_lock = threading.Lock()
_connect_budget = threading.local()


class LongtermError(PaoError):
    """The longterm store could not answer; the message is one line, passwords masked."""


def sqlalchemy_url(url: str) -> sa.URL:
    """Accept libpq URIs (``postgresql://``, ``postgres://``) and ``postgresql+psycopg://``."""
    try:
        parsed = sa.make_url(url.strip())
    except sa.exc.ArgumentError:
        raise LongtermError(f"not a PostgreSQL URL: {mask_url(url)!r} (expected postgresql://user@host:port/db)") from None
    if parsed.drivername in ("postgresql", "postgres", "postgresql+psycopg"):
        return parsed.set(drivername="postgresql+psycopg")
    raise LongtermError(f"unsupported URL scheme {parsed.drivername!r}: use postgresql:// (psycopg 3)")


def describe_url(url: sa.URL) -> str:
    """The URL for humans: password masked."""
    return url.render_as_string(hide_password=True)


def engine_for(url: sa.URL, pool_size: int) -> sa.Engine:
    """The process-wide engine of ``url`` (created lazily; no connection is made here)."""
    key = (url.render_as_string(hide_password=False), pool_size)
    with _engines_lock:
        engine = _engines.get(key)
        if engine is None:
            if url.get_backend_name() == "sqlite":
                engine = _sqlite_engine(url)
            else:
                engine = _postgres_engine(url, pool_size)
            _engines[key] = engine
        return engine


def _postgres_engine(url: sa.URL, pool_size: int) -> sa.Engine:
    engine = sa.create_engine(
        url, pool_size=pool_size, max_overflow=2, pool_timeout=CONNECT_TIMEOUT_CAP, pool_recycle=1800,
        pool_pre_ping=True, hide_parameters=True,
    )

    @sa.event.listens_for(engine, "do_connect")
    def _on_connect(dialect, record, cargs, cparams) -> None:  # type: ignore[no-untyped-def]
        cparams["connect_timeout"] = getattr(_connect_budget, "seconds", None) or int(CONNECT_TIMEOUT_CAP)
        cparams.setdefault("application_name", "pao")

    return engine


def _sqlite_engine(url: sa.URL) -> sa.Engine:
    engine = sa.create_engine(url, connect_args={"check_same_thread": False}, hide_parameters=True)

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
        # Own the transactions (pysqlite's implicit BEGIN cannot be IMMEDIATE).
        dbapi_connection.isolation_level = None
        dbapi_connection.execute("PRAGMA foreign_keys = ON")
        dbapi_connection.execute("PRAGMA journal_mode = WAL")

    @sa.event.listens_for(engine, "begin")
    def _on_begin(connection: sa.Connection) -> None:
        write = connection.get_execution_options().get("pao_write", False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


def sqlite_url(path: Path) -> sa.URL:
    return sa.URL.create("sqlite+pysqlite", database=str(path))


def dispose_all() -> None:
    """Close every pooled connection of this process (tests, forks)."""
    with _engines_lock:
        for engine in _engines.values():
            engine.dispose()
        _engines.clear()


def remaining(deadline: float) -> float:
    """Seconds left before ``deadline``; raise once it has passed."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise LongtermError("deadline passed before the query could run")
    return left


@contextlib.contextmanager
def transaction(engine: sa.Engine, deadline: float, *, write: bool = False) -> Iterator[sa.Connection]:
    """A connection in a transaction bounded by ``deadline`` (commit on success)."""
    left = remaining(deadline)
    is_sqlite = engine.dialect.name == "sqlite"
    options: dict = {"pao_write": write} if is_sqlite else {}
    try:
        connection = _connect(engine, left)
    except sa.exc.SQLAlchemyError as exc:
        raise LongtermError(reason(exc)) from None
    try:
        connection = connection.execution_options(**options)
        with connection.begin():
            if is_sqlite:
                _sqlite_deadline(connection, deadline)
            else:
                milliseconds = max(1, math.ceil(remaining(deadline) * 1000))
                # Searches are index lookups: a sequential scan of a large table is never
                # the plan we want, whatever a LIMIT makes it look like; and JIT-compiling
                # a millisecond query costs hundreds of milliseconds.
                connection.execute(
                    sa.text(
                        "SELECT set_config('statement_timeout', :ms, true), set_config('enable_seqscan', :seq, true),"
                        " set_config('jit', 'off', true)"
                    ),
                    {"ms": str(milliseconds), "seq": "on" if write else "off"},
                )
            yield connection
    except sa.exc.SQLAlchemyError as exc:
        raise LongtermError(reason(exc)) from None
    finally:
        if is_sqlite:
            with contextlib.suppress(Exception):
                connection.connection.driver_connection.set_progress_handler(None, 0)
        connection.close()


def _connect(engine: sa.Engine, left: float) -> sa.Connection:
    # connect_timeout applies to new connections only (pooled ones are reused);
    # libpq and psycopg round it up to 2 s at least.
    _connect_budget.seconds = max(2, math.ceil(min(left, CONNECT_TIMEOUT_CAP)))
    try:
        return engine.connect()
    finally:
        _connect_budget.seconds = None


def _sqlite_deadline(connection: sa.Connection, deadline: float) -> None:
    raw = connection.connection.driver_connection
    raw.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 1000)
    busy_ms = max(1, math.ceil(remaining(deadline) * 1000))
    raw.execute(f"PRAGMA busy_timeout = {int(busy_ms)}")


def reason(exc: BaseException) -> str:
    """One line saying what went wrong, without SQL text, parameters or passwords."""
    original = getattr(exc, "orig", None) or exc
    sqlstate = getattr(original, "sqlstate", None)
    text = " ".join(str(original).split("\n")[0].split())
    hints = {
        "42P01": "a table is missing: run `pao memory init`",
        "42703": "a column is missing: check the [backends.longterm] column mapping or run `pao memory init`",
        "57014": "the query ran past its deadline",
        "28P01": "password authentication failed",
        "3D000": "the database does not exist",
    }
    if sqlstate in hints:
        text = f"{hints[sqlstate]} ({text})" if sqlstate in ("42P01", "42703") else f"{hints[sqlstate]}: {text}"
    elif "interrupted" in text and type(original).__name__ == "OperationalError":
        text = "the query ran past its deadline"
    elif "no such table" in text:
        text = f"a table is missing: run `pao memory init` ({text})"
    return mask_url(text) or type(original).__name__
