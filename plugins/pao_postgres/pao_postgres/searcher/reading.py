"""The searches' one way to the data: a read transaction bounded by the caller's deadline, which
runs plain SQL (``:name`` parameters) and returns rows with named fields (:data:`Rows`).

Beneath it, the store's own driver without SQLAlchemy (whose import, engine and pool cost a
new process more than the search itself): the standard library's ``sqlite3`` for the embedded
file (:mod:`~pao_postgres.searcher.sqlite_read`), psycopg with connections kept between searches
for a server (:mod:`~pao_postgres.searcher.server_read`). Every error leaves as one
:class:`~pao_postgres.errors.LongtermError` line.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, ContextManager

from pao_postgres.searcher.sqlite_read import Rows, file_reading

if TYPE_CHECKING:
    from pao_postgres.options import LongtermOptions

__all__ = ["Rows", "close", "reading"]


def reading(options: LongtermOptions, home: Path, deadline: float) -> ContextManager[Rows]:
    """One read transaction on the store of ``options`` (the embedded file must exist)."""
    if not options.url.strip():
        return file_reading(options.sqlite_file(home), deadline)
    from pao_postgres.searcher.server_read import server_reading  # loads psycopg on use: start-up stays light

    return server_reading(options, deadline)


def close(options: LongtermOptions) -> None:
    """The close step of the searches of ``options``: a server's kept connections closed (the
    embedded file keeps none)."""
    if options.url.strip():
        from pao_postgres.searcher.server_read import close_kept  # psycopg's: only when a server was read

        with contextlib.suppress(Exception):
            close_kept(options)
