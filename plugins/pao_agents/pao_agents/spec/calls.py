"""The agent hooks, called: one function per hook, on pao's plugins (``pao_core.plugins.Plugins``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pao_agents.spec import hookspecs  # noqa: F401  (fills the contracts the collection hooks check)

if TYPE_CHECKING:
    from pao_agents.spec.contracts import HostAgent, McpServer, ReadinessDetector, RegistryStore, TerminalDriver
    from pao_agents.spec.records import AgentRecord, SpawnRequest
    from pao_core.config import PaoConfig
    from pao_core.plugins import Plugins


def host_agents(plugins: Plugins, config: PaoConfig) -> list[HostAgent]:
    """One profile per name: the first in call order (an installed plugin's before pao's own)."""
    return _first_of_each_name(plugins.collect("pao_host_agents", config=config))


def terminal_drivers(plugins: Plugins, config: PaoConfig) -> list[TerminalDriver]:
    """One driver per name: the first in call order."""
    return _first_of_each_name(plugins.collect("pao_terminal_drivers", config=config))


def readiness_detectors(plugins: Plugins, config: PaoConfig) -> list[ReadinessDetector]:
    return plugins.collect("pao_readiness_detectors", config=config)


def session_mcp_servers(plugins: Plugins, config: PaoConfig, request: SpawnRequest) -> list[McpServer]:
    return plugins.collect("pao_session_mcp_servers", config=config, request=request)


def registry_stores(plugins: Plugins, config: PaoConfig) -> list[RegistryStore]:
    return plugins.collect("pao_registry_stores", config=config)


def agent_spawned(plugins: Plugins, record: AgentRecord) -> None:
    plugins.call("pao_agent_spawned", record=record)


def agent_state_changed(plugins: Plugins, record: AgentRecord, old_state: str, new_state: str, source: str) -> None:
    plugins.call("pao_agent_state_changed", record=record, old_state=old_state, new_state=new_state, source=source)


def _first_of_each_name(objects: list[Any]) -> list[Any]:
    chosen: dict[str, Any] = {}
    for obj in objects:
        chosen.setdefault(obj.name, obj)
    return list(chosen.values())
