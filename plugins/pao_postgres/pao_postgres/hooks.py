"""Hook implementations of pao-postgres. Imports nothing heavy: the store loads SQLAlchemy when first used."""

from __future__ import annotations

import argparse
from pathlib import Path

from pao_core.config import PaoConfig
from pao_core.contracts import ConfigTable, RegistryStore
from pao_core.hookspecs import hookimpl
from pao_postgres.backend import LongtermBackend
from pao_postgres.commands import add_memory_commands, load_corpus
from pao_postgres.options import BACKEND_NAME, LongtermOptions
from pao_postgres.registry import PostgresRegistry


@hookimpl
def pao_config_tables() -> list[ConfigTable]:
    return [ConfigTable("backends", BACKEND_NAME, "pao_postgres.options:LongtermOptions",
                        {"PAO_POSTGRES_URL": "url", "PAO_MEMORY_FILE": "memory_file"})]


@hookimpl
def pao_memory_backends(config: PaoConfig) -> list[LongtermBackend]:
    options = config.options("backends", BACKEND_NAME, LongtermOptions)
    return [LongtermBackend(BACKEND_NAME, options, config.home)] if options.enabled else []


@hookimpl
def pao_add_commands(subparsers: argparse._SubParsersAction, config: PaoConfig) -> None:
    add_memory_commands(subparsers)


@hookimpl
def pao_load_corpus(corpus: Path, config: PaoConfig) -> str | None:
    return load_corpus(corpus, config)


@hookimpl
def pao_registry_stores(config: PaoConfig) -> list[RegistryStore]:
    return [PostgresRegistry(config.registry.url, config.machine_name())]
