"""The ``longterm`` memory backend object (cheap to make: nothing connects before the first search).

It puts the jobs together: searches are the searcher's (:mod:`pao_postgres.searcher`: one read
transaction, in this process or in the warm searcher), writes the store's (:mod:`pao_postgres.store`:
SQLAlchemy); :meth:`LongtermBackend.close` is the close step of both."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import attrs

from pao_core.contracts import WritableMemory
from pao_core.models import SearchResults
from pao_embeddings.ahead import stop as stop_vector_helper
from pao_postgres.errors import LongtermError
from pao_postgres.options import LongtermOptions, memory_file
from pao_postgres.searcher.provenance import attach
from pao_postgres.searcher.reading import close as close_reading
from pao_postgres.searcher.retrieval import search

if TYPE_CHECKING:
    from pao_core.models import MemoryItem, Provenance, Remembered
    from pao_postgres.store.longterm import LongtermStore


SYNC_SHARE = 0.6
"""At most this share of a search's time left goes to syncing a changed memory file."""


@attrs.define
class LongtermBackend(WritableMemory):
    """Follows ``pao_core.contracts.MemoryBackend``: observations of the entity store."""

    name: str
    options: LongtermOptions
    home: Path
    _store: LongtermStore | None = attrs.field(default=None, init=False, repr=False)
    _searched_here: bool = attrs.field(default=False, init=False, repr=False)

    @property
    def store(self) -> LongtermStore:
        if self._store is None:
            from pao_postgres.store.longterm import LongtermStore  # loads sqlalchemy on use: start-up stays light

            self._store = LongtermStore(self.options, self.home)
        return self._store

    def search(self, query: str, limit: int, deadline: float) -> Sequence[MemoryItem]:
        file = memory_file(self.options)
        warm = self.options.url.strip() and not self._searched_here and _warm().enabled(self.options)
        if warm:  # a new process: the warm searcher answers when one runs (pao_postgres.searcher.warm)
            found = _never_needed(_warm().search, self.options, self.home, self.name, query, limit, deadline, file)
            if found is not None:
                return found
        results = self.search_here(query, limit, deadline, file)
        if warm:  # for the next process; this one is warm now
            _never_needed(_warm().start, self.options, self.home, self.name)
        self._searched_here = True
        return results

    def search_here(self, query: str, limit: int, deadline: float, file: Path | None) -> Sequence[MemoryItem]:
        """The search in this process: ``file`` (the MCP memory file, if any) synced first."""
        note = self._follow(file, deadline)
        items = search(self.options, self.home, query, limit, deadline)  # no SQLAlchemy: the spawn path
        items = attach(self.options, self.home, items, deadline)
        ranked = [attrs.evolve(item, backend=self.name, rank=rank) for rank, item in enumerate(items, start=1)]
        return SearchResults(ranked, note) if note else ranked

    def follow_file(self, deadline: float) -> str | None:
        """Sync the MCP memory file into the store when it changed (``pao_postgres.store.filesync``);
        a note when it could not be, and the search goes on with the store as it is."""
        return self._follow(memory_file(self.options), deadline)

    def _follow(self, path: Path | None, deadline: float) -> str | None:
        if path is None:
            return None
        from pao_postgres.store.filesync import sync  # the memory file's bridge: only when a file is followed

        try:
            report = sync(self.options, self.home, path, time.monotonic() + SYNC_SHARE * (deadline - time.monotonic()))
        except Exception as exc:
            return f"memory file {path} not synced ({exc}); searched the store as it was; 'pao memory sync' retries"
        if report.synced and self.options.semantic:
            from pao_embeddings import later  # only when a sync wrote something

            if later.enabled(self.options.background_embedding) and later.embeddings_available():
                later.embed_later(self.name, ["memory", "sync"], self.home)
        return report.note

    def remember(self, entity: str, observation: str, provenance: Provenance, deadline: float) -> Remembered:
        """Follows ``pao_core.contracts.WritableMemory``: one observation with its provenance."""
        remembered = self.store.remember(entity, observation, provenance, deadline)
        return attrs.evolve(remembered, item=attrs.evolve(remembered.item, backend=self.name))

    def close(self) -> None:
        """The close step (the host calls it when done with the backend): the store's pooled
        connections and the searches' kept ones closed; a later search opens new ones."""
        if self._store is not None:
            self._store.close()
        close_reading(self.options)
        stop_vector_helper()

    def local_files(self) -> list[Path]:
        """The embedded store's file (none when the store is a PostgreSQL server), for ``pao doctor``."""
        return [] if self.options.url.strip() else [self.options.sqlite_file(self.home)]

    def health(self, deadline: float) -> str:
        from pao_postgres.store.vectors import retrieval_status  # not needed until this runs: start-up stays light

        stats = self.store.stats(deadline)
        searcher = f"; {_warm().describe(self.options, self.home, self.name, deadline)}" if self.options.url.strip() else ""
        if not stats["exists"]:
            return f"{stats['store']}: empty (no store yet; `pao memory import FILE` creates it){searcher}"
        from pao_embeddings.later import last_job  # not needed until this runs: start-up stays light

        job = last_job(self.name, self.home)
        if (path := memory_file(self.options)) is not None:
            from pao_postgres.store.filebatches import describe  # not needed until this runs: start-up stays light

            job = "; ".join(filter(None, (describe(self.options, self.home, path, deadline), job)))
        return (
            f"{stats['store']}: {stats['observations']} observations of {stats['entities']} entities, "
            f"{stats['relations']} relations (mode {stats['mode']}); "
            f"retrieval: {retrieval_status(self.store, stats['observations'], deadline)}{searcher}"
            + (f"; {job}" if job else "")
        )


def _never_needed(call: Any, *args: Any) -> Any:
    """``call(*args)`` of the warm searcher's client; None on any failure of its own (a store error
    the searcher reports is the search's, raised as in-process): the search never depends on it."""
    try:
        return call(*args)
    except LongtermError:
        raise
    except Exception:  # noqa: BLE001 - whatever breaks there, the search runs in-process
        return None


def _warm() -> Any:
    from pao_postgres.searcher import warm  # sockets and digests: only for a server store

    return warm
