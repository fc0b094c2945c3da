"""Hook implementations of pao-historyworker. Imports nothing heavy: the index loads when first used."""

from __future__ import annotations

import argparse
from pathlib import Path

from pao_core.config import PaoConfig
from pao_core.contracts import MemoryBackend
from pao_core.tables import ConfigTable
from pao_core.hookspecs import hookimpl
from pao_historyworker.options import BACKEND_NAME, HistoryOptions


@hookimpl
def pao_config_tables() -> list[ConfigTable]:
    return [ConfigTable("backends", BACKEND_NAME, "pao_historyworker.options:HistoryOptions", {"PAO_HISTORY_URL": "url"})]


@hookimpl
def pao_memory_backends(config: PaoConfig) -> list[MemoryBackend]:
    from pao_historyworker.backend import HistoryBackend  # sqlite3 and the index: only for a run that searches

    options = config.options("backends", BACKEND_NAME, HistoryOptions)
    return [HistoryBackend(options, config.home, name=BACKEND_NAME)] if options.enabled else []


@hookimpl
def pao_ahead(command: str) -> list[str]:
    return ["pao_historyworker:before_brief"] if command == "brief" else []  # the vector searches' helper


@hookimpl
def pao_add_commands(subparsers: argparse._SubParsersAction, config: PaoConfig) -> None:
    from pao_historyworker.commands import add_history_commands  # the history commands: not for pao brief

    add_history_commands(subparsers)


@hookimpl
def pao_load_corpus(corpus: Path, config: PaoConfig) -> str | None:
    from pao_historyworker.commands import load_corpus  # pao eval's loading: not for pao brief

    return load_corpus(corpus, config)


@hookimpl
def pao_warm_up(purpose: str, config: PaoConfig) -> None:
    if purpose != "briefing":
        return
    options = config.options("backends", BACKEND_NAME, HistoryOptions)
    if not options.enabled:
        return
    import pao_historyworker.backend  # noqa: F401  (the helper that gathers: the backend's modules, ahead of the topic)

    if options.semantic and options.url is None:  # numpy and the model only where this process will embed the topic
        from pao_embeddings.model import available, run_before, shared_encoder

        if available():
            run_before(shared_encoder, None)
