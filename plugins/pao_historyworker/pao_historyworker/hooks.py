"""Hook implementations of pao-historyworker. Imports nothing heavy until used."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from pao_core.hookspecs import hookimpl

if TYPE_CHECKING:
    from pao_core.config import ConfigTable, PaoConfig

    from pao_historyworker.backend import HistoryBackend

BACKEND_NAME = "history"


@hookimpl
def pao_config_tables() -> list[ConfigTable]:
    from pao_core.config import ConfigTable

    return [ConfigTable("backends", BACKEND_NAME, "pao_historyworker.options:HistoryOptions", {"PAO_HISTORY_URL": "url"})]


@hookimpl
def pao_memory_backends(config: PaoConfig) -> list[HistoryBackend]:
    from pao_historyworker.backend import HistoryBackend
    from pao_historyworker.options import HistoryOptions

    options = config.options("backends", BACKEND_NAME, HistoryOptions)
    if not options.enabled:
        return []
    return [HistoryBackend(options, config.home, name=BACKEND_NAME)]


@hookimpl
def pao_add_commands(subparsers: argparse._SubParsersAction, config: PaoConfig) -> None:
    from pao_historyworker.commands import add_history_commands

    add_history_commands(subparsers)
