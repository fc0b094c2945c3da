"""The agent side's hooks, added to pao's through ``pao_addhooks`` (``pao_agents.spec.addhooks``).

Each spec says what it is in one line; ``docs/hooks.md`` spells out when it is called and what its
answer must be (``tests/test_hooks_doc.py`` checks it, as it checks pao_core's). A plugin implements
them with :data:`pao_agents.spec.hookimpl`, which marks the implementation optional: pao-agents may be
disabled while the plugin is loaded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from pao_agents.spec.contracts import HostAgent, McpServer, ReadinessDetector, RegistryStore, TerminalDriver
from pao_core.hookspecs import collects, hookspec

if TYPE_CHECKING:
    from pao_agents.spec.records import AgentRecord, SpawnRequest
    from pao_core.config import PaoConfig


# -- Spawning: which agent, in which terminal, and when it is ready ---------------


@collects(HostAgent)
def pao_host_agents(config: PaoConfig) -> Iterable[HostAgent] | None:
    """Return host-agent profiles (coding-agent CLIs)."""


@collects(TerminalDriver)
def pao_terminal_drivers(config: PaoConfig) -> Iterable[TerminalDriver] | None:
    """Return terminal drivers."""


@collects(ReadinessDetector)
def pao_readiness_detectors(config: PaoConfig) -> Iterable[ReadinessDetector] | None:
    """Return detectors that classify a screen capture."""


@collects(McpServer)
def pao_session_mcp_servers(config: PaoConfig, request: SpawnRequest) -> Iterable[McpServer] | None:
    """The MCP servers (stdio) one spawned session gets, for that session only."""


@hookspec
def pao_agent_spawned(record: AgentRecord) -> None:
    """Event: an agent was started, found ready and recorded in the registry."""


@hookspec
def pao_agent_state_changed(record: AgentRecord, old_state: str, new_state: str, source: str) -> None:
    """Event: an agent's recorded state changed."""


# -- Tracking: where the registry of agents lives -----------------------------------


@collects(RegistryStore)
def pao_registry_stores(config: PaoConfig) -> Iterable[RegistryStore] | None:
    """Return the agent registry stores this plugin provides."""
