"""The objects that hooks return: one base class per contract, with the optional parts' defaults.

Hooks declare, objects do: a collection hook hands pao objects of these classes, and
pao calls their methods (on worker threads, under deadlines). A plugin subclasses the
contract, implements the abstract methods and overrides an optional one only when it
has something to say; pao never probes for a method. ``docs/hooks.md`` lists every
method from these classes (``tests/test_hooks_doc.py`` keeps it in sync).
"""

from __future__ import annotations

import abc
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Mapping, Sequence

import attrs

if TYPE_CHECKING:
    import argparse

    from pao_core.config import PaoConfig
    from pao_core.models import Briefing, BriefingContext, Delivery, MemoryItem, Provenance, Remembered


Status = Literal["ok", "warn", "fail"]

MAX_OBSERVATION_CHARS = 16 * 1024  # characters: the longest observation pao stores (remember, import, add, sync)


@attrs.frozen
class Check:
    """One finding of ``pao doctor`` (``pao_doctor_checks`` returns them): ``fail`` means the next spawn cannot
    work as configured; ``area`` places it (``registry``, ``agent``...), ``fix`` says what to do."""

    area: str
    name: str
    status: Status
    line: str
    fix: str = ""
    data: Mapping[str, Any] = attrs.field(factory=dict)


class MemoryBackend(abc.ABC):
    """A memory store pao can query; ``name`` is its configured name (``longterm``, ``history``...)."""

    __slots__ = ()
    name: str

    @abc.abstractmethod
    def search(self, query: str, limit: int, deadline: float) -> Sequence[MemoryItem]:
        """Up to ``limit`` items, best first; ``deadline`` is an absolute ``time.monotonic()`` value
        (pao stops waiting then, whatever the backend does). A ``pao_core.models.SearchResults``
        may carry a ``note`` (what the backend could not do in time) that pao shows."""

    @abc.abstractmethod
    def health(self, deadline: float) -> str:
        """One line describing the store, or raise with a one-line reason."""

    def local_files(self) -> Sequence[Path]:
        """the embedded files the backend reads (``pao doctor`` shows them). Default: none."""
        return ()

    def close(self) -> None:
        """the close step, called by the host when done with the backend (its pools closed). Default: none."""


class WritableMemory(MemoryBackend):
    """A :class:`MemoryBackend` that can also be written to (``pao mcp``'s ``remember``); one that does not
    subclass this is never written to."""

    __slots__ = ()

    @abc.abstractmethod
    def remember(self, entity: str, observation: str, provenance: Provenance, deadline: float) -> Remembered:
        """Store ``observation`` about ``entity`` by ``deadline``, with its ``provenance`` (shown later
        as ``meta["provenance"]``: ``agent``, ``session_id``, ``recorded_at`` by its own clock, ``kept_at``);
        a repeat returns the item already there, ``created`` false; past its per-session cap, a ``PaoError``."""


def writable(backends: Sequence[object]) -> list[WritableMemory]:
    """The backends that can be written to, in their order."""
    return [backend for backend in backends if isinstance(backend, WritableMemory)]


class BriefingSection(abc.ABC):
    """One section of the briefing template, placed by ascending ``order``; ``key`` names it."""

    __slots__ = ()
    key: str
    title: str
    order: int

    @abc.abstractmethod
    def render(self, context: BriefingContext) -> str | None:
        """The section's markdown body, or ``""``/``None`` to drop the section."""


class BriefingDeliverer(abc.ABC):
    """Puts a briefing where an agent started in a folder reads it (pao-agents: as a spawn of the default host would)."""

    __slots__ = ()
    name: str

    @abc.abstractmethod
    def deliver(self, briefing: Briefing, folder: str) -> Delivery:
        """Write ``briefing`` into ``folder``; when it cannot, raise ``PaoError`` with one line, having written nothing."""


class CommandRouter(abc.ABC):
    """Runs some ``pao`` commands elsewhere: pao-machines runs an agent's command on the machine that runs it."""

    __slots__ = ()
    name: str
    commands: frozenset[str] | None = None  # the only commands it may take (the plugin index keeps them); None: any

    @abc.abstractmethod
    def route(self, args: argparse.Namespace, config: PaoConfig) -> int | None:
        """Run the parsed command elsewhere and return its exit code, or ``None``: it runs here.
        A ``PaoError`` it raises is the command's one-line error."""

    def observe(self, records: Sequence[Any], config: PaoConfig) -> dict[str, dict[str, Any]]:
        """what each of ``records`` it reaches elsewhere is doing: ``pao list --json``'s row, by name. Default: none."""
        return {}
