"""Hook implementations of pao-terminalapp. Imports nothing heavy until used."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pao_agents.spec import hookimpl as agent_hookimpl
from pao_core.tables import ConfigTable
from pao_core.hookspecs import hookimpl

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_agents.spec import TerminalDriver


@hookimpl
def pao_config_tables() -> list[ConfigTable]:
    return [ConfigTable("terminals", "terminalapp", "pao_terminalapp.driver:TerminalAppOptions")]


@agent_hookimpl
def pao_terminal_drivers(config: PaoConfig) -> list[TerminalDriver]:
    """The Terminal.app driver, configured from ``[terminals.terminalapp]`` (even off macOS)."""
    from pao_terminalapp.driver import TerminalAppDriver, TerminalAppOptions  # the Mac seam: loaded on use

    return [TerminalAppDriver(config.options("terminals", "terminalapp", TerminalAppOptions))]
