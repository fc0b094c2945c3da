"""Hook implementations of pao-postgres. Imports nothing heavy: each hook imports what it returns, so
that a command which needs one of them (``pao list`` asks only for registry stores) loads no more."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from pao_agents.spec import hookimpl as agent_hookimpl
from pao_core.tables import ConfigTable
from pao_core.hookspecs import hookimpl
from pao_postgres import BACKEND_NAME

if TYPE_CHECKING:
    from pao_agents.spec import RegistryStore
    from pao_core.contracts import Check
    from pao_core.config import PaoConfig
    from pao_postgres.backend import LongtermBackend
    from pao_postgres.options import LongtermOptions


@hookimpl
def pao_config_tables() -> list[ConfigTable]:
    return [ConfigTable("backends", BACKEND_NAME, "pao_postgres.options:LongtermOptions",
                        {"PAO_POSTGRES_URL": "url", "PAO_MEMORY_FILE": "memory_file"}),
            ConfigTable("warm_brief", "", "pao_postgres.options:WarmBriefOptions")]


@hookimpl
def pao_memory_backends(config: PaoConfig) -> list[LongtermBackend]:
    from pao_postgres.backend import LongtermBackend  # the backend: only when briefing
    from pao_postgres.options import LongtermOptions  # its options: only when briefing

    options = config.options("backends", BACKEND_NAME, LongtermOptions)
    return [LongtermBackend(BACKEND_NAME, options, config.home)] if options.enabled else []


@hookimpl
def pao_ahead(command: str) -> list[str]:
    return ["pao_postgres:before_brief"] if command == "brief" else []  # the vector searches' helper


@hookimpl
def pao_shortcuts(command: str) -> list[str]:
    return ["pao_postgres.warm_brief:answer"] if command == "brief" else []  # the warm brief server answers


@hookimpl
def pao_doctor_checks(config: PaoConfig) -> list[Check]:
    import time  # only pao doctor asks

    from pao_core.contracts import Check  # pao doctor's record: only when it runs
    from pao_postgres.options import WarmBriefOptions  # likewise
    from pao_postgres.warm_brief import describe  # sockets: only when pao doctor runs

    enabled = config.options("warm_brief", "", WarmBriefOptions).enabled
    return [Check("memory", "warm brief", "ok", f"warm brief: {describe(enabled, time.monotonic() + 1.0)}")]


@hookimpl
def pao_add_commands(subparsers: argparse._SubParsersAction, config: PaoConfig) -> None:
    from pao_postgres.commands import add_memory_commands  # `pao memory`: only when its parser is built

    add_memory_commands(subparsers)


@hookimpl
def pao_load_corpus(corpus: Path, config: PaoConfig) -> str | None:
    from pao_postgres.commands import load_corpus  # `pao eval` only

    return load_corpus(corpus, config)


@agent_hookimpl
def pao_registry_stores(config: PaoConfig) -> list[RegistryStore]:
    from pao_agents.spec import machine_name, registry_options  # the agents' option tables: not for pao brief
    from pao_postgres.registry import PostgresRegistry  # the registry store: only when a registry is opened

    return [PostgresRegistry(registry_options(config).url, machine_name(config))]


@hookimpl
def pao_warm_up(purpose: str, config: PaoConfig) -> None:
    if purpose != "briefing":
        return
    from pao_postgres.options import LongtermOptions  # its options: only when briefing

    options = config.options("backends", BACKEND_NAME, LongtermOptions)
    if not options.enabled:
        return
    import pao_postgres.backend  # noqa: F401  (the helper that gathers: the backend's modules, ahead of the topic)

    if options.semantic and not _warm_searcher(options):  # numpy and the model only where this process will embed
        from pao_embeddings.model import available, run_before, shared_encoder

        if available():
            run_before(shared_encoder, None)


def _warm_searcher(options: LongtermOptions) -> bool:
    """Whether a server store's warm searcher embeds the topic (started by the first search if none runs)."""
    if not options.url.strip():
        return False
    from pao_postgres.searcher import warm  # sockets and digests: only for a server store

    return warm.enabled(options)
