"""The ``history`` memory backend: the local index, or a server over HTTP when a URL is set."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Sequence

import attrs

from pao_core.contracts import MemoryBackend
from pao_core.models import SearchResults
from pao_embeddings.ahead import stop as stop_vector_helper
from pao_historyworker.index import HistoryIndexError, connect, stats
from pao_historyworker.options import HistoryOptions
from pao_historyworker.search import Tuning, search

if TYPE_CHECKING:
    from pao_core.models import MemoryItem
    from pao_historyworker.client import HistoryClient


REFRESH_SHARE = 0.4
"""At most this share of a search's time left goes to indexing new transcripts first."""


class DeadlinePassed(TimeoutError):
    """The search ran out of time."""


@contextlib.contextmanager
def local_index(path: Path, deadline: float | None = None) -> Iterator[sqlite3.Connection]:
    """A connection to the local index that aborts its statements once ``deadline`` passes."""
    conn = connect(path)
    if deadline is not None:
        conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 2000)
    try:
        yield conn
    except sqlite3.OperationalError as exc:
        if deadline is not None and time.monotonic() > deadline:
            raise DeadlinePassed("local history search ran past its deadline") from None
        raise RuntimeError(f"history index {path}: {exc}") from None
    finally:
        conn.close()


@attrs.define
class HistoryBackend(MemoryBackend):
    """Past coding-agent conversations, searched by topic."""

    options: HistoryOptions
    home: Path
    name: str = "history"
    _client: HistoryClient | None = attrs.field(default=None, init=False, repr=False)

    @property
    def index_path(self) -> Path:
        return self.options.index_path(self.home)

    @property
    def client(self) -> HistoryClient:
        if self._client is None:
            from pao_historyworker.client import HistoryClient  # not needed until this runs: start-up stays light

            options = self.options
            if options.token_file is None and self.home is not None:  # the token `pao history serve` made
                options = attrs.evolve(options, token_file=options.token_path(self.home))
            self._client = HistoryClient(options)
        return self._client

    def search(self, query: str, limit: int, deadline: float) -> Sequence[MemoryItem]:
        if self.options.url:
            return self.client.search(query, limit, deadline)

        note = self.refresh(deadline)
        try:
            with local_index(self.index_path, deadline) as conn:
                items = search(conn, query, limit, Tuning(semantic=self.options.semantic), deadline=deadline)
        except HistoryIndexError:
            if note:  # another process is creating the index: nothing to search yet
                return SearchResults([], note)
            root = self.options.transcripts_path()
            if not self.index_path.exists() and not root.exists():  # a new user: no conversation to recall yet
                return SearchResults([], f"no transcripts in {root} yet: nothing to recall")
            raise
        return SearchResults(items, note) if note else items

    def refresh(self, deadline: float) -> str | None:
        """Index new and grown transcripts within the options' bound; a note of what is left."""
        budget = min(self.options.refresh_seconds, REFRESH_SHARE * (deadline - time.monotonic()))
        if budget <= 0:
            return None
        from pao_historyworker.fresh import refresh  # indexing code on use: start-up stays light

        try:
            done = refresh(self.index_path, self.options.transcripts_path(), budget)
        except Exception as exc:  # the index as it is still answers
            return f"new transcripts not indexed: {type(exc).__name__}: {exc}"
        if done.exchanges_added or done.files_left:
            self._finish_later(done.files_left)
        return done.note

    def _finish_later(self, files_left: int) -> None:
        """What the refresh left (vectors of what it indexed, files past its bound) to a background
        ``pao history index`` (:mod:`pao_embeddings.later`)."""
        from pao_embeddings import later  # only when a refresh indexed something

        if self.home is None or not later.enabled(self.options.background_embedding):
            return
        if files_left or (self.options.semantic and later.embeddings_available()):
            later.embed_later(self.name, ["history", "index", "--embed"], self.home)

    def close(self) -> None:
        """The close step: ``pao brief``'s vector helper, if one runs, is done with (its searches are)."""
        stop_vector_helper()

    def local_files(self) -> list[Path]:
        """The local index file (none when a server is configured), for ``pao doctor``."""
        return [] if self.options.url else [self.index_path]

    def health(self, deadline: float) -> str:
        if self.options.url:
            return self.client.health(deadline)

        with local_index(self.index_path, deadline) as conn:
            counts = stats(conn, self.index_path, self.options.semantic)
        from pao_embeddings.later import last_job  # not needed until this runs: start-up stays light

        job = last_job(self.name, self.home) if self.home is not None else None
        return (f"local index {counts['index']}: {counts['exchanges']} exchanges from {counts['sessions']} sessions;"
                f" retrieval: {counts['semantic_search']}" + (f"; {job}" if job else ""))
