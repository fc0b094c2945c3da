"""pao-agents' entry point that adds the agent hooks to pao's, as pytest plugins add theirs."""

from __future__ import annotations

import pluggy

from pao_agents.spec import hookspecs
from pao_core.hookspecs import hookimpl


@hookimpl
def pao_addhooks(pluginmanager: pluggy.PluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)
