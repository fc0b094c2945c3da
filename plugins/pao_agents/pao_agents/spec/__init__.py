"""pao-agents' public spec: everything another plugin may import from pao-agents, and nothing else.

A terminal driver, a host agent, a readiness detector, a registry store or a session's MCP
server is written against this package alone:

* the hooks (:mod:`pao_agents.spec.hookspecs`, added to pao's through ``pao_addhooks``) and
  :data:`hookimpl`, the marker their implementations use;
* the contracts (:mod:`pao_agents.spec.contracts`): ``TerminalDriver``, ``HostAgent``,
  ``ReadinessDetector``, ``RegistryStore``, ``McpServer``, ``McpWiring``;
* the records (:mod:`pao_agents.spec.records`): ``SpawnRequest``, ``AgentRecord``, ``ScreenVerdict``;
* the errors a registry store raises (:mod:`pao_agents.spec.errors`): ``UnknownAgent``, ``DuplicateAgent``,
  ``RegistryUnavailable``;
* the option tables (:mod:`pao_agents.spec.options`): ``[spawn]``, ``[notify]``, ``[machine]``, ``[registry]``;
* the calls of the agent hooks (:mod:`pao_agents.spec.calls`): ``host_agents(plugins, config)``...;
* the kit implementers need: starting a process with exactly its environment (``write_spec``,
  ``launcher_argv``, ``discard_spec``, ``agent_environment``), the agent's private folder (``EVENTS``, ``BRIEFING``,
  ``append_command``, ``event_hook_command``, ``read_events``), what an agent's events and screen say of its state (``event_state``,
  ``newest_state``, ``agent_state``, ``quoted``...: :mod:`pao_agents.states`), the registry's helpers
  (``open_registry``, ``readable``, ``stamped``, ``structure_record``), locked edits of the files hosts and the
  registry keep (``update_json``, ``lock_for``, ``refuse_symlink``), and the agents themselves (``Agents``,
  ``Observation``).

Importing it costs nothing: each name is imported from its module on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

_PUBLIC = {
    **dict.fromkeys(("hookimpl",), "pao_agents.spec.marker"),
    **dict.fromkeys(("HostAgent", "McpServer", "McpWiring", "PERMISSION_MODES", "ReadinessDetector", "RegistryStore",
                     "TerminalDriver", "default_driver_name", "permission_summary"), "pao_agents.spec.contracts"),
    **dict.fromkeys(("AgentRecord", "AgentState", "ScreenState", "ScreenVerdict", "SpawnRequest"),
                    "pao_agents.spec.records"),
    **dict.fromkeys(("DuplicateAgent", "RegistryUnavailable", "UnknownAgent"), "pao_agents.spec.errors"),
    **dict.fromkeys(("MachineOptions", "NOTIFY_STATES", "NotifyOptions", "RegistryOptions", "SpawnOptions", "machine_name",
                     "notify_options", "registry_options", "spawn_options", "with_spawn"), "pao_agents.spec.options"),
    **dict.fromkeys(("agent_spawned", "agent_state_changed", "host_agents", "readiness_detectors", "registry_stores",
                     "session_mcp_servers", "terminal_drivers"), "pao_agents.spec.calls"),
    **dict.fromkeys(("LAUNCHER_PATH", "discard_spec", "launcher_argv", "write_spec"), "pao_agents.launch"),
    **dict.fromkeys(("agent_environment",), "pao_agents.resolve"),
    **dict.fromkeys(("BRIEFING", "EVENTS", "append_command", "read_events"), "pao_agents.agentdir"),
    **dict.fromkeys(("event_hook_command",), "pao_agents.eventhook"),
    **dict.fromkeys(("FREE_NAME_TRIES", "JsonRegistry", "open_registry", "readable", "stamped", "structure_record"),
                    "pao_agents.registry"),
    **dict.fromkeys(("UnreadableJSON", "lock_for", "refuse_symlink", "update_json"), "pao_agents.jsonedit"),
    **dict.fromkeys(("check_name", "name_from_folder", "name_from_topic", "numbered"), "pao_agents.names"),
    **dict.fromkeys(("Agents", "Observation"), "pao_agents.lifecycle"),
    **dict.fromkeys(("record_json", "show_list"), "pao_agents.commands"),
    **dict.fromkeys(("age_text", "topic_cell"), "pao_agents.light"),
    **dict.fromkeys(("Verdict", "agent_state", "event_state", "event_verdict", "newest_state", "newest_verdict",
                     "quoted", "screen_fills_in"), "pao_agents.states"),
    **dict.fromkeys(("ScreenReader", "last_words"), "pao_agents.readiness"),
    **dict.fromkeys(("Helper", "helper"), "pao_agents.forked"),
    **dict.fromkeys(("LISTED_EVENT",), "pao_agents.mcpwait"),
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'pao_agents.spec' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
