"""The agent side's contracts: what a terminal driver, a host agent, a readiness detector, a registry store
and a session's MCP wiring are, as the ``pao_agents.spec.hookspecs`` hooks return them.

A plugin subclasses the contract, implements the abstract methods and overrides an optional one only when
it has something to say; pao never probes for a method. ``docs/hooks.md`` lists every method from these
classes (``tests/test_hooks_doc.py`` keeps it in sync).
"""

from __future__ import annotations

import abc
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Mapping, Sequence

import attrs

from pao_core.errors import PaoError
from pao_agents.spec.errors import UnknownAgent

if TYPE_CHECKING:
    from pao_agents.spec.records import AgentRecord, ScreenVerdict, SpawnRequest

@attrs.frozen
class McpServer:
    """An MCP server (stdio) that one spawned session gets, for that session only.

    ``env`` holds values safe to show on a command line (paths). ``files`` are written owner-only into
    the agent's private folder before the CLI starts: what the server needs that neither a command line
    nor the agent's environment may show (a store URL with its password). ``tools`` are allowed without
    a permission prompt in that session."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = attrs.field(factory=dict, converter=dict)
    files: Mapping[str, str] = attrs.field(factory=dict, converter=dict)
    tools: tuple[str, ...] = ()


@attrs.frozen
class McpWiring:
    """How one host CLI gets a session's MCP servers: flags, files for the agent's private folder, variables."""

    args: tuple[str, ...] = ()
    files: Mapping[str, str] = attrs.field(factory=dict, converter=dict)
    env: Mapping[str, str] = attrs.field(factory=dict, converter=dict)
    servers: tuple[McpServer, ...] = ()



class TerminalDriver(abc.ABC):
    """Where agents run (a tmux window, a Terminal.app tab...): it starts processes and reads and
    writes their screen; readiness and submission are pao's logic on top. ``target`` is the
    driver's opaque address of one agent (kept in its registry record)."""

    __slots__ = ()
    name: str
    screen_notices: ClassVar[tuple[str, ...]] = ()
    """Starts of lines the terminal itself draws on an agent's screen (tmux's ``Pane is dead``), left out
    of the agent's last words that pao quotes."""

    @abc.abstractmethod
    def availability(self) -> str | None:
        """``None`` when the driver can be used here, otherwise a one-line reason."""

    @abc.abstractmethod
    def spawn(self, name: str, folder: str, command: Sequence[str], env: Mapping[str, str]) -> str:
        """Start ``command`` in ``folder`` with exactly ``env``, never through a shell or the terminal's
        command line (``pao_agents.launch`` does it); the target."""

    @abc.abstractmethod
    def paste(self, target: str, text: str) -> None:
        """Put ``text`` into the agent's input as one paste."""

    @abc.abstractmethod
    def press(self, target: str, key: str) -> None:
        """Press one key (``Enter``, ``Escape``...)."""

    @abc.abstractmethod
    def read(self, target: str) -> str:
        """The visible screen, as text."""

    @abc.abstractmethod
    def is_alive(self, target: str) -> bool:
        """Whether the agent's process still runs."""

    @abc.abstractmethod
    def kill(self, target: str) -> None:
        """Stop the agent and close its window or tab."""

    def pid(self, target: str) -> int | None:
        """the agent's process id, recorded when known. Default: unknown."""
        return None

    def version(self) -> str | None:
        """the terminal's version, for ``pao doctor``. Default: unknown."""
        return None

    def attach(self, target: str) -> None:
        """show the agent to the user (``pao attach``; tmux returns when they detach). Default: cannot."""
        raise PaoError(f"the {self.name} terminal cannot show an agent; it runs at {target}")


def default_driver_name(drivers: Sequence[TerminalDriver]) -> str:
    """The first driver available here, in call order (else the first at all, to say why it is not)."""
    available = next((driver for driver in drivers if driver.availability() is None), None)
    return (available or drivers[0]).name if drivers else ""


class ReadinessDetector(abc.ABC):
    """Classifies one screen capture of a host agent; ``hosts`` names the hosts it applies to (empty: all)."""

    __slots__ = ()
    name: str
    hosts: Sequence[str] = ()

    @abc.abstractmethod
    def classify(self, screen: str) -> ScreenVerdict | None:
        """The screen's state, or ``None`` for no opinion."""


PERMISSION_MODES = ("default", "acceptEdits", "plan", "auto", "bypass")
"""pao's names, the same for every host: ``default`` asks before running commands (and, in
Claude Code, before editing); ``bypass`` runs every tool call without asking, so it is opt-in
(``pao spawn --permission-mode bypass`` or ``permission_mode = "bypass"`` in the host's table)."""


def permission_summary(mode: str) -> str:
    """What the agent does in ``mode``, in words (``pao spawn`` and ``pao doctor`` print it)."""
    return {"bypass": "runs every command WITHOUT asking", "default": "asks before running commands"}.get(
        mode, "see docs/security.md")


class HostAgent(abc.ABC):
    """A coding-agent CLI pao can start (Claude Code, Codex, Gemini CLI...): everything host-specific.

    ``context_file``: what the CLI reads on start-up in its folder; ``submit_key`` submits a pasted prompt."""

    __slots__ = ()
    name: str
    context_file: str
    submit_key: str
    session_channel: ClassVar[str | None] = None
    """How the briefing reaches the model without a file in the folder (``None``: the context-file import)."""
    event_channel: ClassVar[str | None] = None
    """How the CLI reports its events into the agent's ``events.jsonl`` (``None``: only the screen tells)."""
    chooses_session_id: ClassVar[bool] = False
    """The CLI starts a new session under an id pao chose (``request.session_id``)."""
    takes_first_prompt: ClassVar[bool] = False
    """The CLI takes the task as its first prompt on the command line (``request.prompt``): no paste."""
    holds_first_prompt_for_mcp: ClassVar[bool] = False
    """With pao's MCP server wired, the task is typed once the CLI has the server's tools (``pao_agents.mcpwait``),
    not put on its command line: a CLI that starts its first turn before its MCP servers answered."""
    pipes_briefing: ClassVar[bool] = False
    """The CLI reads its session channel's briefing file once as it starts, and waits for a pipe there: pao starts it
    before the briefing is composed and hands the briefing over through a FIFO (``pao_agents.launch.feed_briefing``)."""

    @abc.abstractmethod
    def command(self, request: SpawnRequest) -> list[str]:
        """The command line that starts the agent."""

    @abc.abstractmethod
    def environment(self, request: SpawnRequest) -> Mapping[str, str | None]:
        """Variables to set on top of pao's own environment; ``None`` removes one."""

    @abc.abstractmethod
    def context_block(self, briefing_file: str, briefing_markdown: str) -> str:
        """What pao puts between its markers in ``context_file`` so the CLI reads the briefing."""

    @abc.abstractmethod
    def preseed(self, folder: str) -> Mapping[str, Any] | None:
        """Answer, before start, what the CLI would ask on screen (folder trust...), only for a folder the user
        trusted or with no ``project_risks``; what it added to the user's files (for ``unseed``), or nothing."""

    @abc.abstractmethod
    def nudge(self, request: SpawnRequest, briefing_file: str) -> str:
        """The first prompt pao submits once the agent is ready."""

    @abc.abstractmethod
    def session_id(self, record: AgentRecord) -> str | None:
        """The CLI's session id for this agent, once it exists."""

    @abc.abstractmethod
    def resume_command(self, record: AgentRecord, mcp_args: Sequence[str] = ()) -> list[str]:
        """The command line that resumes the agent's session (with the session's MCP flags, as at spawn)."""

    def project_risks(self, folder: str) -> list[str]:
        """what ``folder``'s project settings make the CLI run once trusted, a line per file and key. Default: none."""
        return []

    def unseed(self, folder: str, added: Mapping[str, Any]) -> None:
        """remove what ``preseed`` returned as added, where it is still as pao wrote it. Default: nothing."""

    def consent_gaps(self, environ: Mapping[str, str]) -> list[str]:
        """what only the user can do before the host can start (spawn refuses with these). Default: none."""
        return []

    def version(self) -> str | None:
        """the installed CLI's version, for ``pao doctor``. Default: unknown (doctor says not found)."""
        return None

    def known_versions(self) -> tuple[str, ...]:
        """the versions whose screens pao was measured against. Default: none."""
        return ()

    def session_files(self, request: SpawnRequest) -> dict[str, str]:
        """per-session files for the agent's private folder (settings with hooks), by file name. Default: none."""
        return {}

    def permission_mode(self) -> str:
        """the permission mode the agent starts in (``default``, ``bypass``...), shown by spawn and doctor."""
        return "default"

    def state_files(self) -> list[tuple[str, str | None]]:
        """each file the pre-seed edits, with why it cannot be edited (or ``None``). Default: none."""
        return []

    def events_silenced(self, folder: str) -> str | None:
        """why the CLI runs no hook of pao's in ``folder`` (state then comes from the screen). Default: ``None``."""
        return None

    def mcp_wiring(self, servers: Sequence[McpServer], folder: Path, environ: Mapping[str, str]) -> McpWiring:
        """how the CLI gets a session's MCP servers (``pao_session_mcp_servers``): flags ``command`` puts right
        after the executable (``request.mcp_args``), files pao writes owner-only into ``folder`` (the agent's
        private folder), variables for the agent; never the user's settings. Default: none (no MCP server)."""
        return McpWiring()


class RegistryStore(abc.ABC):
    """Where the agent registry lives: one record per agent name, for every machine that shares it.

    ``schemes``: the ``[registry] url`` schemes it serves (``""``: no URL, pao's default). Each method
    is one transaction: two processes on one machine or two never both add one name, and a change never
    loses another's. An unreachable store raises ``RegistryUnavailable`` (one line, passwords masked);
    pao never falls back to another store."""

    __slots__ = ()
    name: str
    schemes: Sequence[str] = ()

    @abc.abstractmethod
    def list(self) -> list[AgentRecord]:
        """Every readable record, oldest first (one unreadable record is reported on stderr and skipped)."""

    @abc.abstractmethod
    def find(self, name: str) -> AgentRecord | None:
        """The record called ``name``, or ``None``."""

    @abc.abstractmethod
    def add(self, record: AgentRecord, candidates: Callable[[int], str] | None = None) -> AgentRecord:
        """Add ``record`` (``DuplicateAgent`` when its name is taken) or, with ``candidates``, under the
        first free name ``candidates(n)`` for n = 1, 2, ...; the record as stored (``machine`` filled in)."""

    @abc.abstractmethod
    def change(self, name: str, edit: Callable[[AgentRecord], AgentRecord]) -> AgentRecord:
        """Store ``edit(record)`` in place of the record, with no other write in between (``UnknownAgent``
        when there is none; an exception from ``edit`` changes nothing); the new record."""

    @abc.abstractmethod
    def remove(self, name: str) -> AgentRecord:
        """Forget the record called ``name`` (``UnknownAgent`` when there is none); the record removed."""

    def location(self) -> str:
        """where the records are, for messages and ``pao doctor`` (passwords masked). Default: ``name``."""
        return self.name

    def names(self) -> set[str]:
        """every agent name. Default: from ``list``."""
        return {record.name for record in self.list()}

    def get(self, name: str) -> AgentRecord:
        """the record called ``name``, or ``UnknownAgent``. Default: from ``find``."""
        record = self.find(name)
        if record is None:
            raise UnknownAgent.named(name, self.names())
        return record

    def update(self, name: str, **changes: Any) -> AgentRecord:
        """set fields of one record and ``updated_at`` to now, in one ``change``."""
        return self.change(name, lambda record: record.changed(**changes))
