"""Hook implementations of pao-postgres. Imports nothing heavy until used."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from pao_core.hookspecs import hookimpl

if TYPE_CHECKING:
    from pao_core.config import ConfigTable, PaoConfig
    from pao_postgres.backend import LongtermBackend

BACKEND_NAME = "longterm"


@hookimpl
def pao_config_tables() -> list[ConfigTable]:
    from pao_core.config import ConfigTable

    return [ConfigTable("backends", BACKEND_NAME, "pao_postgres.options:LongtermOptions", {"PAO_POSTGRES_URL": "url", "PAO_MEMORY_FILE": "memory_file"})]


@hookimpl
def pao_memory_backends(config: PaoConfig) -> list[LongtermBackend]:
    from pao_postgres.backend import LongtermBackend
    from pao_postgres.options import LongtermOptions

    options = config.options("backends", BACKEND_NAME, LongtermOptions)
    if not options.enabled:
        return []
    return [LongtermBackend(BACKEND_NAME, options, config.home)]


@hookimpl
def pao_add_commands(subparsers: argparse._SubParsersAction, config: PaoConfig) -> None:
    from pao_postgres.commands import add_memory_commands

    add_memory_commands(subparsers)
