"""Step 2 of the pipeline: query every memory backend at once, each under a deadline; :func:`brief` composes.

Each backend's ``search`` runs on a daemon thread of its own
(:func:`pao_core.waiting.start`), so a backend that hangs costs its deadline and
nothing more: pao stops waiting for it and reports it as a timeout.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections import Counter
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import attrs

from pao_core.briefing import compose
from pao_core.errors import describe
from pao_core.models import BackendResult, MemoryItem, SearchResults
from pao_core.waiting import Outcome, start

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_core.contracts import MemoryBackend
    from pao_core.models import Briefing
    from pao_core.plugins import Plugins


def _search(backend: MemoryBackend, query: str, limit: int, deadline: float) -> tuple[Any, BaseException | None, float]:
    """One search: ``(raw result, error, finish time)``; the backend's error is reported, never raised."""
    try:
        return backend.search(query, limit, deadline), None, time.monotonic()
    except Exception as exc:
        return None, exc, time.monotonic()


def _checked_items(name: str, raw: Any, limit: int) -> tuple[MemoryItem, ...]:
    """Validate what a backend returned; give every item its backend name and rank."""
    if isinstance(raw, (str, bytes, Mapping)) or not isinstance(raw, Iterable):
        raise TypeError(f"search() returned {type(raw).__name__}, expected a sequence of MemoryItem")
    items = []
    for position, item in enumerate(raw, start=1):
        if not isinstance(item, MemoryItem):
            raise TypeError(f"search() returned a {type(item).__name__} at position {position}, expected MemoryItem")
        items.append(attrs.evolve(item, backend=name, rank=item.rank or position))
        if len(items) >= limit:
            break
    return tuple(items)


def gather(
    backends: Iterable[MemoryBackend],
    query: str,
    *,
    limit: int,
    timeout: float,
    timeouts: Mapping[str, float] | None = None,
) -> dict[str, BackendResult]:
    """Search all ``backends`` in parallel and return one result per backend name.

    ``timeout`` is the default deadline in seconds; ``timeouts`` overrides it per
    backend name. Never raises for a backend's failure.
    """
    started = time.monotonic()
    pending: list[tuple[str, float, Outcome[Any]]] = []
    results: dict[str, BackendResult] = {}
    named = [(backend.name, backend) for backend in backends]
    counts = Counter(name for name, _ in named)
    for name, backend in named:
        if counts[name] > 1:
            results[name] = BackendResult(name, "error", error=f"{counts[name]} backends share this name; rename them in the config")
            continue
        deadline = started + (timeouts or {}).get(name, timeout)
        search = functools.partial(_search, backend, query, limit, deadline)
        pending.append((name, deadline, start(search, name=f"pao-gather-{name}")))

    for name, deadline, future in pending:
        try:
            raw, error, finished = future.result(timeout=max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            budget = deadline - started
            results[name] = BackendResult(
                name, "timeout", elapsed_ms=_ms(started, time.monotonic()), error=f"no answer within {budget:.2f} s"
            )
            continue
        try:
            if error is not None:
                raise error
            items = _checked_items(name, raw, limit)
        except Exception as exc:
            results[name] = BackendResult(name, "error", elapsed_ms=_ms(started, finished), error=describe(exc))
            continue
        note = raw.note if isinstance(raw, SearchResults) else None
        note = " ".join(str(note).split()) or None if note else None
        results[name] = BackendResult(name, "ok", items=items, elapsed_ms=_ms(started, finished), note=note)
    return results


def _ms(started: float, finished: float) -> float:
    return round((finished - started) * 1000, 2)


def brief(
    topic: str,
    *,
    folders: Sequence[str] = (),
    config: PaoConfig,
    plugins: Plugins,
    backends: Sequence[MemoryBackend] | None = None,
) -> Briefing:
    """Gather memory for ``topic`` from every backend in parallel and compose the briefing."""
    started = time.monotonic()
    chosen = plugins.memory_backends(config) if backends is None else backends
    results = gather(chosen, topic, limit=config.gather.limit, timeout=config.gather.deadline)
    for made in chosen if backends is None else ():  # made here: closed here (a failing close skips no other)
        with contextlib.suppress(Exception):
            made.close()
    return compose(
        topic,
        folders=tuple(folders),
        results=results,
        config=config,
        plugins=plugins,
        started=started,
    )
