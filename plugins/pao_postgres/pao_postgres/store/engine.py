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
from pathlib import Path
from typing import Iterator

import sqlalchemy as sa

from pao_postgres.errors import LongtermError, reason, remaining
from pao_postgres.searcher.server_read import CONNECT_TIMEOUT_CAP, POSTGRES_SETTINGS, close_all, postgres_settings
from pao_postgres.searcher.sqlite_read import apply_deadline

WRITE_DEADLINE = 600.0
"""Seconds granted to CLI writes (``init``, ``import``, ``add``)."""

_engines: dict[tuple, sa.Engine] = {}
_engines_lock = threading.Lock()
_connect_budget = threading.local()


def sqlalchemy_url(url: str) -> sa.URL:
    """Accept libpq URIs (``postgresql://``, ``postgres://``) and ``postgresql+psycopg://``."""
    try:
        parsed = sa.make_url(url.strip())
    except sa.exc.ArgumentError:
        # never echoed: without a scheme, "user:password@host" is not recognisable as a URL to mask
        raise LongtermError("the longterm store URL is not a PostgreSQL URL "
                            "(expected postgresql://user@host:port/db)") from None
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


def dispose(url: sa.URL, pool_size: int) -> None:
    """Close the pooled connections of the engine of ``url`` and forget it (a store's close step)."""
    with _engines_lock:
        engine = _engines.pop((url.render_as_string(hide_password=False), pool_size), None)
    if engine is not None:
        engine.dispose()


def dispose_all() -> None:
    """Close every pooled connection of this process (tests, forks)."""
    with _engines_lock:
        for engine in _engines.values():
            engine.dispose()
        _engines.clear()
    close_all()


@contextlib.contextmanager
def transaction(engine: sa.Engine, deadline: float, *, write: bool = False) -> Iterator[sa.Connection]:
    """A connection in a transaction bounded by ``deadline`` (commit on success); searches
    read through :mod:`pao_postgres.searcher.reading` instead."""
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
                apply_deadline(connection.connection.driver_connection, deadline)
            else:
                connection.exec_driver_sql(POSTGRES_SETTINGS, postgres_settings(deadline, write))
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
