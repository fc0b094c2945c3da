"""``pao brief``'s vector searches in a helper process started before pao loads anything else.

A new ``pao brief`` process spends most of its time importing: pao's plugin host and
configuration, the stores' modules, and numpy with the sentence model (about 0.1 s of CPU
for numpy alone). The two halves do not depend on each other until the stores are
searched, but threads of one process take turns on the interpreter lock. So the memory
plugins declare :func:`before_brief` with the ``pao_ahead`` hook: the ``pao`` command calls
it before any plugin loads, and it forks a helper (:func:`pao_agents.spec.helper`) that
imports numpy, maps the model's weights and embeds the likely topic on the other core. When
a store's search starts (:func:`pao_embeddings.similar.nearest_soon` given the SQL that reads
its vectors), the helper ranks the store's vectors while this process runs the lexical
search, and this process never imports numpy. The helper gets no secret (it reads the
store's file itself) and writes nothing (its output goes nowhere).

A helper that is gone costs time only: the search runs here, as without one. One that is
late past the search's deadline costs the vectors, as a slow model load here does (the
lexical hits answer alone).
"""

from __future__ import annotations

import atexit
import functools
import os
import signal
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Sequence

if TYPE_CHECKING:
    from pao_agents.spec import Helper

LIKELY_TOPICS = 2
"""Arguments of the command line (not options) that the helper embeds while it waits: ``pao brief TOPIC``'s
topic, or a ``--folder``'s value and then the topic."""
NOT_SENT: Any = object()
"""What :func:`run` answers when no helper runs (the caller does the work itself)."""

_helper: Helper | None = None
_one_order_at_a_time = threading.Lock()  # orders and answers share one pipe each: one search talks to it at a time


def before_brief(argv: Sequence[str], table: str, url_variable: str) -> None:
    """Fork the helper (from a memory plugin's ``pao_ahead`` for ``pao brief``) when its store ``[backends.TABLE]``
    will search vectors here (:func:`searches_here`) and the platform forks. Nothing else is imported first, so
    the helper starts at once (without the model installed, it idles: no search asks it for vectors)."""
    global _helper
    if _helper is not None or "-h" in argv or "--help" in argv or not searches_here(table, url_variable):
        return  # (the command's help searches no store)
    from pao_agents.spec import helper  # the helper machinery pao spawn uses: only a process that forks one loads it

    likely_topics = [arg.strip() for arg in argv if not arg.startswith("-")][1:1 + LIKELY_TOPICS]
    _helper = helper(functools.partial(_prepare, likely_topics))
    if _helper is not None:
        atexit.register(end)  # reaped with this process: its CPU time is this command's


def searches_here(table: str, url_variable: str) -> bool:
    """Whether the configuration file leaves ``[backends.TABLE]`` on, semantic and local (no ``url``, none in
    ``url_variable``). Read before pao validates the file: a wrong guess costs time only."""
    if os.environ.get(url_variable):
        return False
    options = _backends().get(table)
    options = options if isinstance(options, dict) else {}
    return options.get("enabled") is not False and options.get("semantic") is not False and not options.get("url")


@functools.cache
def _backends() -> dict[str, Any]:
    from pao_core.paths import config_path  # the standard library and platformdirs: imported already

    try:
        with open(config_path(), "rb") as stream:
            text = stream.read()
        if b"backends" not in text:  # no table to read: the helper starts without waiting for tomllib's import
            return {}
        import tomllib  # what pao's configuration loads next anyway

        backends = tomllib.loads(text.decode("utf-8")).get("backends")
    except (OSError, ValueError):  # none, or broken: pao says so once it loads it
        return {}
    return backends if isinstance(backends, dict) else {}


def _prepare(likely_topics: Sequence[str]) -> None:
    from pao_embeddings import model  # in the helper: numpy (one BLAS thread) and the mapped weights

    if model.available():
        model.run_before(model.shared_encoder, None)
        for topic in likely_topics:  # while pao loads: the search then finds its topic's vector made
            model.encode_topic(topic)


def running() -> bool:
    return _helper is not None and _helper.pid is not None


def run(work: Callable[[], Any], deadline: float) -> Any:
    """``work()`` done by the helper by ``deadline``, what it raises raised here; done here when the helper
    is gone or cannot take it (``work`` then says what a late answer is); :data:`NOT_SENT` without a helper."""
    helper = _helper
    if helper is None or helper.pid is None:
        return NOT_SENT
    if not _one_order_at_a_time.acquire(timeout=max(0.0, deadline - time.monotonic())):
        return work()  # the other search still holds the helper past this deadline
    try:
        sent = helper.run(work)
        return work() if sent is None else sent.result(max(0.0, deadline - time.monotonic()))
    finally:
        _one_order_at_a_time.release()


def stop() -> None:
    """Kill the helper now without waiting (a store's close step: the briefing's searches are done, nothing more is
    sent to it); :func:`end` reaps it at exit. Tearing down its numpy and mapped weights takes the kernel 5-20 ms,
    which then overlaps pao's composing and printing the briefing instead of following them."""
    helper = _helper
    pid = None if helper is None else helper.pid
    if pid is not None:
        try:
            os.kill(pid, signal.SIGKILL)  # our child, not reaped yet: its pid cannot be another process's
        except ProcessLookupError:
            pass


def end() -> None:
    """End and reap the helper (at exit)."""
    global _helper
    helper, _helper = _helper, None
    if helper is not None:
        helper.cancel()
