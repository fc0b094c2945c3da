"""Hook specifications: the whole plugin surface of pao, and nothing else.

Hooks declare, objects do: the collection hooks return objects (see
``pao_core.contracts``) whose methods the pipeline runs on its thread pool under
deadlines. Each spec says what it is in one line; ``docs/hooks.md`` spells out when it is
called and what its answer must be, once (``tests/test_hooks_doc.py`` checks that the page
shows each spec's signature and its line).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, TypeVar

import pluggy

from pao_core.contracts import (BriefingDeliverer, BriefingSection, Check, CommandRouter, ConfigTable, HostAgent,
                                McpServer, MemoryBackend, ReadinessDetector, RegistryStore, TerminalDriver)

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_core.models import AgentRecord, Briefing, SpawnRequest
    from pao_core.plugins import Plugins

hookspec = pluggy.HookspecMarker("pao")
hookimpl = pluggy.HookimplMarker("pao")
F = TypeVar("F", bound=Callable[..., object])

RETURNS: dict[str, type] = {}
"""Collection hook -> the contract each object it returns must be (``pao_core.plugins`` checks)."""


def collects(contract: type) -> Callable[[F], F]:
    """A hook that returns objects of ``contract``: what is not one is recorded and dropped."""

    def mark(spec: F) -> F:
        RETURNS[spec.__name__] = contract
        return hookspec(spec)

    return mark


# -- Start-up: what a plugin reads from the configuration and adds to the command line


@collects(ConfigTable)
def pao_config_tables() -> Iterable[ConfigTable] | None:
    """Declare the configuration tables the plugin reads and the environment variables that override their keys."""


@hookspec
def pao_add_commands(subparsers: argparse._SubParsersAction, config: PaoConfig) -> None:
    """Add subcommands or a command group to ``pao``."""


@collects(CommandRouter)
def pao_command_routers(config: PaoConfig) -> Iterable[CommandRouter] | None:
    """Run a command somewhere else than here."""


@hookspec
def pao_ahead(command: str) -> Iterable[str] | None:
    """Name what ``pao COMMAND`` starts before any plugin loads: ``"module:function"``, called with the arguments."""


@hookspec
def pao_warm_up(purpose: str, config: PaoConfig) -> None:
    """Import now, in a helper process, what work for ``purpose`` (``briefing`` today) will need there."""


# -- Gathering: where memory comes from -------------------------------------------


@collects(MemoryBackend)
def pao_memory_backends(config: PaoConfig) -> Iterable[MemoryBackend] | None:
    """Return the memory backends this plugin provides, each with its configured ``name``."""


@hookspec
def pao_load_corpus(corpus: Path, config: PaoConfig) -> str | None:
    """Load this plugin's part of a labelled corpus into its store, for ``pao eval``."""


# -- Composition: what the briefing says ------------------------------------------


@collects(BriefingSection)
def pao_briefing_sections(config: PaoConfig) -> Iterable[BriefingSection] | None:
    """Return sections of the briefing template."""


@collects(BriefingDeliverer)
def pao_briefing_deliverers(config: PaoConfig, plugins: Plugins) -> Iterable[BriefingDeliverer] | None:
    """Return what writes a briefing where an agent started in a folder reads it (``pao brief --write``)."""


@hookspec
def pao_briefing_written(briefing: Briefing, folder: str, path: str) -> None:
    """Event: a briefing was delivered into ``folder`` (``path`` is the briefing file)."""


# -- Spawning: which agent, in which terminal, and when it is ready ---------------


@collects(HostAgent)
def pao_host_agents(config: PaoConfig) -> Iterable[HostAgent] | None:
    """Return host-agent profiles (coding-agent CLIs)."""


@collects(TerminalDriver)
def pao_terminal_drivers(config: PaoConfig) -> Iterable[TerminalDriver] | None:
    """Return terminal drivers."""


@collects(ReadinessDetector)
def pao_readiness_detectors(config: PaoConfig) -> Iterable[ReadinessDetector] | None:
    """Return detectors that classify a screen capture."""


@collects(McpServer)
def pao_session_mcp_servers(config: PaoConfig, request: SpawnRequest) -> Iterable[McpServer] | None:
    """The MCP servers (stdio) one spawned session gets, for that session only."""


@hookspec
def pao_agent_spawned(record: AgentRecord) -> None:
    """Event: an agent was started, found ready and recorded in the registry."""


@hookspec
def pao_agent_state_changed(record: AgentRecord, old_state: str, new_state: str, source: str) -> None:
    """Event: an agent's recorded state changed."""


# -- Tracking: where the registry of agents lives -----------------------------------


@collects(RegistryStore)
def pao_registry_stores(config: PaoConfig) -> Iterable[RegistryStore] | None:
    """Return the agent registry stores this plugin provides."""


# -- Checking: what ``pao doctor`` reports ---------------------------------------------


@collects(Check)
def pao_doctor_checks(config: PaoConfig, plugins: Plugins) -> Iterable[Check] | None:
    """Add findings to ``pao doctor`` about what this plugin keeps."""
