"""The objects that hooks return, as typing protocols.

Hooks declare, objects do: a hook hands pao one of these objects, and the pipeline
calls its methods (on its thread pool, under deadlines). Plugins need not inherit
from anything; matching the protocol is enough.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Protocol, Sequence, runtime_checkable

if TYPE_CHECKING:
    from pathlib import Path

    from pao_core.models import (
        AgentRecord, BriefingContext, McpServer, McpWiring, MemoryItem, Provenance, Remembered, ScreenVerdict, SpawnRequest,
    )


@runtime_checkable
class MemoryBackend(Protocol):
    """A memory store pao can query.

    ``name`` is the configured backend name (``longterm``, ``history``, ...).
    ``search`` returns items best first; ``deadline`` is an absolute
    ``time.monotonic()`` value the backend should respect (the pipeline stops
    waiting at that moment whatever the backend does). ``health`` returns a
    one-line description of the store, or raises with a one-line reason.
    Optional: ``local_files() -> list[Path]``, the embedded files the backend reads
    (none when it talks to a server); ``pao doctor`` shows whether they exist and
    their sizes. ``search`` may return a ``pao_core.models.SearchResults`` whose
    ``note`` the briefing, ``pao brief --json`` and stderr show (what the backend
    could not do in time).
    """

    name: str

    def search(self, query: str, limit: int, deadline: float) -> Sequence[MemoryItem]: ...

    def health(self, deadline: float) -> str: ...


@runtime_checkable
class WritableMemory(Protocol):
    """The optional writable part of a :class:`MemoryBackend`.

    Read-only is the default: a backend without ``remember`` is never written to.
    ``remember`` stores ``observation`` about ``entity`` with its ``provenance`` (kept
    where the backend's later items show it, as ``meta["provenance"]`` with ``agent``,
    ``session_id`` and ``recorded_at``), by ``deadline`` (``time.monotonic()``). The
    same observation of the same entity is stored once: a repeat returns the item
    already there, ``created`` false.
    """

    name: str

    def remember(self, entity: str, observation: str, provenance: Provenance, deadline: float) -> Remembered: ...


def writable(backends: Sequence[object]) -> list[WritableMemory]:
    """The backends that can be written to, in their order."""
    return [backend for backend in backends if isinstance(backend, WritableMemory)]


@runtime_checkable
class BriefingSection(Protocol):
    """One section of the briefing template.

    ``render`` returns the section's markdown body, or ``""``/``None`` to drop the
    section. Sections are placed by ascending ``order``.
    """

    key: str
    title: str
    order: int

    def render(self, context: BriefingContext) -> str | None: ...


@runtime_checkable
class TerminalDriver(Protocol):
    """Where agents run: a tmux window, a Terminal.app tab, ...

    A driver only starts processes and reads and writes their screen; readiness,
    paste confirmation and submission are pao's own logic on top of it. ``target``
    is the driver's opaque address of one agent (kept in its registry record).
    ``availability`` returns ``None`` when the driver can be used here, otherwise a
    one-line reason. Optional: ``pid(target) -> int | None``, the agent's process id
    (pao records it when the driver has it); ``version() -> str | None``, shown by
    ``pao doctor``; ``attach(target) -> None``, show the agent to the user (``pao
    attach``: tmux attaches or switches the client and returns on detach; Terminal.app
    brings the window forward). Without it, ``pao attach`` says the terminal cannot.
    """

    name: str

    def availability(self) -> str | None: ...

    def spawn(self, name: str, folder: str, command: Sequence[str], env: Mapping[str, str]) -> str: ...

    def paste(self, target: str, text: str) -> None: ...

    def press(self, target: str, key: str) -> None: ...

    def read(self, target: str) -> str: ...

    def is_alive(self, target: str) -> bool: ...

    def kill(self, target: str) -> None: ...


@runtime_checkable
class ReadinessDetector(Protocol):
    """Classifies one screen capture of a host agent.

    ``hosts`` names the host agents it applies to (empty: all). ``classify``
    returns ``None`` when it has no opinion.
    """

    name: str
    hosts: Sequence[str]

    def classify(self, screen: str) -> ScreenVerdict | None: ...


@runtime_checkable
class HostAgent(Protocol):
    """A coding-agent CLI pao can start (Claude Code, Codex, Gemini CLI, ...).

    Everything host-specific lives here: the command line, the context file and
    its import syntax, the trust pre-seed, the submit key and where its session
    transcripts are. Optional: ``consent_gaps(environ) -> list[str]``, what only the
    user can do before the host can start (spawn refuses, in step 1, with these).
    For ``pao doctor``, optional too: ``version() -> str | None`` (the installed
    CLI's), ``known_versions() -> tuple[str, ...]`` (those whose screens pao was
    measured against) and ``state_files() -> list[tuple[str, str | None]]`` (each file
    the pre-seed edits, with the reason it cannot be edited, or ``None``).
    """

    name: str
    context_file: str
    submit_key: str

    def command(self, request: SpawnRequest) -> list[str]: ...

    def environment(self, request: SpawnRequest) -> Mapping[str, str | None]:
        """Variables to set for the agent on top of pao's own environment; ``None`` removes one."""
        ...

    def context_block(self, briefing_file: str, briefing_markdown: str) -> str: ...

    def preseed(self, folder: str) -> None: ...

    def nudge(self, request: SpawnRequest, briefing_file: str) -> str: ...

    def session_id(self, record: AgentRecord) -> str | None: ...

    def resume_command(self, record: AgentRecord) -> list[str]: ...


@runtime_checkable
class SessionMcp(Protocol):
    """The optional part of a :class:`HostAgent` that hands a session its MCP servers.

    ``mcp_wiring`` says how the CLI gets ``servers`` for one session: flags (which
    ``command`` puts right after the executable, from ``request.mcp_args``), files pao
    writes owner-only into ``folder`` (the agent's private folder) and variables for the
    agent's environment; never the user's settings. A host without it gets none.
    """

    def mcp_wiring(self, servers: Sequence[McpServer], folder: Path, environ: Mapping[str, str]) -> McpWiring: ...
