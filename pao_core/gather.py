"""Step 2 of the pipeline: query every memory backend at once, each under a deadline.

Each backend's ``search`` runs on a daemon thread of its own, so a backend that
hangs costs its deadline and nothing more: pao stops waiting for it, reports it as
a timeout, and the process can still exit (a ``ThreadPoolExecutor`` would join the
hung worker at interpreter exit).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import attrs

from pao_core.errors import describe
from pao_core.models import BackendResult, MemoryItem

if TYPE_CHECKING:
    from pao_core.contracts import MemoryBackend


def _run(backend: MemoryBackend, query: str, limit: int, deadline: float, future: Future[Any]) -> None:
    """Run one search; the future's result is ``(raw result, finish time)``."""
    if not future.set_running_or_notify_cancel():
        return
    try:
        raw = backend.search(query, limit, deadline)
    except BaseException as exc:  # reported as the backend's error, never raised
        exc.pao_finished_at = time.monotonic()  # type: ignore[attr-defined]
        future.set_exception(exc)
    else:
        future.set_result((raw, time.monotonic()))



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
    pending: list[tuple[str, float, Future[Any]]] = []
    results: dict[str, BackendResult] = {}
    named = [(getattr(backend, "name", None) or type(backend).__name__, backend) for backend in backends]
    counts = Counter(name for name, _ in named)
    for name, backend in named:
        if counts[name] > 1:
            results[name] = BackendResult(name, "error", error=f"{counts[name]} backends share this name; rename them in the config")
            continue
        deadline = started + (timeouts or {}).get(name, timeout)
        future: Future[Any] = Future()
        thread = threading.Thread(
            target=_run, args=(backend, query, limit, deadline, future), name=f"pao-gather-{name}", daemon=True
        )
        thread.start()
        pending.append((name, deadline, future))

    for name, deadline, future in pending:
        try:
            raw, finished = future.result(timeout=max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            budget = deadline - started
            results[name] = BackendResult(
                name, "timeout", elapsed_ms=_ms(started, time.monotonic()), error=f"no answer within {budget:.2f} s"
            )
            continue
        except Exception as exc:
            finished = getattr(exc, "pao_finished_at", time.monotonic())
            results[name] = BackendResult(name, "error", elapsed_ms=_ms(started, finished), error=describe(exc))
            continue
        try:
            items = _checked_items(name, raw, limit)
        except Exception as exc:
            results[name] = BackendResult(name, "error", elapsed_ms=_ms(started, finished), error=describe(exc))
            continue
        note = getattr(raw, "note", None)
        note = " ".join(str(note).split()) or None if note else None
        results[name] = BackendResult(name, "ok", items=items, elapsed_ms=_ms(started, finished), note=note)
    return results


def _ms(started: float, finished: float) -> float:
    return round((finished - started) * 1000, 2)
