"""Hook implementations of pao-tmux. Imports nothing heavy: libtmux loads when a driver method runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pao_agents.spec import hookimpl as agent_hookimpl
from pao_core.tables import ConfigTable
from pao_core.hookspecs import hookimpl

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_agents.spec import ReadinessDetector, TerminalDriver


@hookimpl
def pao_config_tables() -> list[ConfigTable]:
    return [ConfigTable("terminals", "tmux", "pao_tmux.driver:TmuxOptions", {"PAO_TMUX_SOCKET": "socket"})]


@agent_hookimpl(tryfirst=True)  # where tmux runs, it is the default terminal (``[spawn] terminal = ""``)
def pao_terminal_drivers(config: PaoConfig) -> list[TerminalDriver]:
    from pao_tmux.driver import TmuxDriver, TmuxOptions  # libtmux: loaded on use, not at start-up

    return [TmuxDriver(config.options("terminals", "tmux", TmuxOptions))]


@agent_hookimpl
def pao_readiness_detectors(config: PaoConfig) -> list[ReadinessDetector]:
    from pao_tmux.screens import ExitedPane  # loaded on use, like the driver

    return [ExitedPane()]
