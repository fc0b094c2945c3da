"""pao-agents' entry point that adds the agent hooks to pao's, as pytest plugins add theirs, and declares the
agent side's top-level option tables (``pao_agents.spec.options``)."""

from __future__ import annotations

import pluggy

from pao_agents.spec import hookspecs
from pao_core.tables import ConfigTable
from pao_core.hookspecs import hookimpl

TABLES = {"spawn": ("SpawnOptions", {}), "notify": ("NotifyOptions", {}), "machine": ("MachineOptions", {}),
          "registry": ("RegistryOptions", {"PAO_REGISTRY_URL": "url"})}
"""Each table: its options class in ``pao_agents.spec.options``, the variables that override its keys."""


@hookimpl
def pao_addhooks(pluginmanager: pluggy.PluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def pao_config_tables() -> list[ConfigTable]:
    return [ConfigTable(kind, "", f"pao_agents.spec.options:{options}", env) for kind, (options, env) in TABLES.items()]
