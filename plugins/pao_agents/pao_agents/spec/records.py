"""The agent side's records: a spawn request, an agent as the registry keeps it, a screen's verdict.

``attrs`` frozen classes like pao_core's records, serialised with the same ``pao_core.models.converter``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal, Mapping

import attrs

from pao_core.models import as_mapping

ScreenState = Literal["ready", "busy", "waiting", "blocked", "failed", "dead", "unknown"]
AgentState = Literal["starting", "ready", "busy", "waiting", "blocked", "failed", "paused", "dead"]


@attrs.frozen
class SpawnRequest:
    """A validated request to start one agent (output of pipeline step 1)."""

    topic: str
    folder: str
    name: str
    host: str
    terminal: str = ""
    nudge: bool = True
    session_id: str | None = None
    """Chosen by pao before the CLI starts, for hosts that accept one (``chooses_session_id``)."""
    agent_dir: str | None = None
    """The agent's private folder when the briefing goes through the host's session channel."""
    prompt: str | None = None
    """The first prompt (the task), for hosts that take it on the command line."""
    mcp_args: tuple[str, ...] = ()
    """The session's MCP servers in the host's own flags (``McpWiring.args``), right after the executable."""

    def private_folder(self) -> str:
        """``agent_dir``, which a host's session files are written for; a request without one is refused in words."""
        if not self.agent_dir:
            raise ValueError(f"agent {self.name!r}: a host's session files need the agent's private folder "
                             "(SpawnRequest.agent_dir), and this request has none")
        return self.agent_dir


@attrs.frozen
class ScreenVerdict:
    """A readiness detector's reading of one screen capture."""

    state: ScreenState
    reason: str | None = None
    detector: str = ""


@attrs.frozen
class AgentRecord:
    """One agent pao started, as kept in the registry."""

    name: str
    folder: str
    topic: str
    host: str
    terminal: str
    target: str
    machine: str = ""
    """The machine that runs the agent (``[machine] name``, else the short host name); the registry fills it in when empty."""
    state: AgentState = "starting"
    pid: int | None = None
    session_id: str | None = None
    briefing_hash: str | None = None
    created_at: dt.datetime = attrs.field(factory=lambda: dt.datetime.now(dt.timezone.utc))
    updated_at: dt.datetime = attrs.field(factory=lambda: dt.datetime.now(dt.timezone.utc))
    extra: Mapping[str, Any] = attrs.field(factory=dict, converter=as_mapping)

    def changed(self, **changes: Any) -> AgentRecord:
        """This record with ``changes`` and ``updated_at`` now."""
        return attrs.evolve(self, **changes, updated_at=dt.datetime.now(dt.timezone.utc))
