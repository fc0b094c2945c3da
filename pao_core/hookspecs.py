"""Hook specifications: the whole plugin surface of pao, and nothing else.

Hooks declare, objects do: the collection hooks return objects (see
``pao_core.contracts``) whose methods the pipeline runs on its thread pool under
deadlines. ``docs/hooks.md`` documents every hook; a test keeps it in sync.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, TypeVar

import pluggy

from pao_core.contracts import (BriefingSection, CommandRouter, ConfigTable, HostAgent, MemoryBackend, ReadinessDetector,
                                RegistryStore, TerminalDriver)
from pao_core.models import McpServer

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_core.models import AgentRecord, Briefing, SpawnRequest

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
    """Declare the configuration tables this plugin reads, and their environment variables.

    Called once per ``pao`` run, before the configuration is loaded. Each
    ``pao_core.config.ConfigTable`` names a table (``kind`` ``backends``, ``terminals``
    or ``hosts``, and ``name``), the attrs class it is structured into (or
    ``"module:Class"``, imported only when the table is present) and the environment
    variables that override its keys. pao validates every table present at load time:
    an unknown key, a wrong type or a value an attrs validator refuses is an error
    naming the file and the key, whichever command runs.

    :returns: ``ConfigTable`` records.
    """



@hookspec
def pao_add_commands(subparsers: argparse._SubParsersAction, config: PaoConfig) -> None:
    """Add subcommands (or a command group) to the ``pao`` command line.

    Called while the parser is built, before any command runs: in runs whose command is
    one of this plugin's, and in a complete load (which records the commands' names and
    help in the plugin index: ``pao --help`` then imports no plugin).
    A command sets ``func=callable(args, config) -> int`` on its parser with
    ``set_defaults``; raising ``pao_core.errors.PaoError`` gives the user one line.

    :param subparsers: the ``add_subparsers()`` object of the ``pao`` parser.
    :param config: the effective configuration.
    """


@collects(CommandRouter)
def pao_command_routers(config: PaoConfig) -> Iterable[CommandRouter] | None:
    """Return routers that may run a command somewhere else than here.

    Called once per ``pao`` command, after its arguments were parsed and before it
    runs. Each router's ``route(args, config)`` answers in call order: the first exit
    code wins, ``None`` lets the command run here. pao-machines' router runs an agent's
    command (``status``, ``send``, ``kill``...) on the machine that runs the agent, and
    ``pao spawn --on TARGET`` there.

    :param config: the effective configuration.
    :returns: routers following ``pao_core.contracts.CommandRouter``.
    """


# -- Gathering: where memory comes from -------------------------------------------


@collects(MemoryBackend)
def pao_memory_backends(config: PaoConfig) -> Iterable[MemoryBackend] | None:
    """Return the memory backends this plugin provides.

    Called once per pipeline run, before gathering. Return the backends enabled by
    ``config`` (each with its configured ``name``), or ``None``/empty for none. Must
    be cheap: connect lazily, in ``search``.

    :param config: the effective configuration (plugin options under ``[backends.NAME]``).
    :returns: backend objects following ``pao_core.contracts.MemoryBackend``.
    """


@hookspec
def pao_load_corpus(corpus: Path, config: PaoConfig) -> str | None:
    """Load this plugin's part of a labelled corpus into its store, for ``pao eval``.

    Called once per ``pao eval``, before any query, with ``config.home`` a throwaway
    folder. Raising fails the evaluation with that one line.

    :param corpus: the corpus folder (``memory.jsonl``, ``transcripts/``, ``queries.jsonl``...).
    :param config: the evaluation's configuration.
    :returns: one line saying what was loaded, or ``None`` when the corpus holds nothing for this plugin.
    """


# -- Composition: what the briefing says ------------------------------------------


@collects(BriefingSection)
def pao_briefing_sections(config: PaoConfig) -> Iterable[BriefingSection] | None:
    """Return sections of the briefing template.

    Called once per briefing, after fusion. Sections from all plugins are rendered
    in ascending ``order``; a section that renders empty is dropped. A later plugin
    may replace a default section by returning one with the same ``key``.

    :param config: the effective configuration.
    :returns: section objects following ``pao_core.contracts.BriefingSection``.
    """


@hookspec
def pao_briefing_written(briefing: Briefing, folder: str, path: str) -> None:
    """Event: a briefing was delivered into an agent's folder.

    Called after ``CONTEXT_BRIEFING.md`` and the host's context file were written
    atomically. Exceptions are recorded and reported, never fatal.

    :param briefing: the briefing as written.
    :param folder: the agent's working directory.
    :param path: the absolute path of the briefing file.
    """


# -- Spawning: which agent, in which terminal, and when it is ready ---------------


@collects(HostAgent)
def pao_host_agents(config: PaoConfig) -> Iterable[HostAgent] | None:
    """Return the host agents (coding-agent CLIs) this plugin can start.

    Called when a spawn or lifecycle command resolves ``--host``. Profiles are
    matched by ``name``; of two with one name, the first in call order wins (the
    plugin registered last: an installed plugin's replaces pao's built-in profile).

    :param config: the effective configuration (options under ``[hosts.NAME]``).
    :returns: profiles following ``pao_core.contracts.HostAgent``.
    """


@collects(TerminalDriver)
def pao_terminal_drivers(config: PaoConfig) -> Iterable[TerminalDriver] | None:
    """Return the terminal drivers this plugin provides.

    Called when a command resolves ``--terminal`` or reaches an agent's target.
    Return drivers even when they cannot run here: their ``availability()`` says why,
    and ``pao plugins`` shows it.

    :param config: the effective configuration (options under ``[terminals.NAME]``).
    :returns: drivers following ``pao_core.contracts.TerminalDriver``.
    """


@collects(ReadinessDetector)
def pao_readiness_detectors(config: PaoConfig) -> Iterable[ReadinessDetector] | None:
    """Return detectors that classify a host agent's screen.

    Called when readiness polling or ``pao monitor`` starts. For each capture, the
    verdicts of all detectors for the host are combined: any ``blocked`` wins, then
    ``busy``/``waiting``, then ``ready``.

    :param config: the effective configuration.
    :returns: detectors following ``pao_core.contracts.ReadinessDetector``.
    """


@collects(McpServer)
def pao_session_mcp_servers(config: PaoConfig, request: SpawnRequest) -> Iterable[McpServer] | None:
    """Return the MCP servers (stdio) one spawned session gets, for that session only.

    Called once per spawn after step 1 (the agent's name, folder, host and, where the
    host takes one, session id are known), unless ``pao spawn --no-mcp``. Each host
    profile hands them to its CLI on the command line or in a per-agent file, never in
    the user's settings, with their ``tools`` allowed without a prompt. pao-mcp's
    implementation returns ``pao`` (``search_memory``, ``remember``, ``memory_status``).

    :param config: the effective configuration.
    :param request: the validated spawn request.
    :returns: ``pao_core.models.McpServer`` records.
    """


@hookspec
def pao_agent_spawned(record: AgentRecord) -> None:
    """Event: an agent was started, found ready and recorded in the registry.

    Called once per successful spawn, after the nudge. Exceptions are recorded and
    reported, never fatal.

    :param record: the agent's registry record.
    """


@hookspec
def pao_agent_state_changed(record: AgentRecord, old_state: str, new_state: str, source: str) -> None:
    """Event: an agent's recorded state changed (say, ``busy`` to ``waiting``).

    Called from the one place pao records an agent's state, after the registry was
    written, once per change. States: ``starting``, ``ready``, ``busy``, ``waiting``
    (for input), ``blocked`` (a dialog or permission prompt), ``dead`` (its process
    ended), ``paused``, and any a state source adds (``finished``, ``failed``).
    Exceptions are recorded and reported, never fatal. pao's own desktop notifier
    (``[notify] desktop = true``) is one implementation.

    :param record: the agent's registry record, as written.
    :param old_state: the state recorded before.
    :param new_state: the state recorded now (``record.state``).
    :param source: what saw the change: ``spawn``, ``screen``, ``pause``, ``resume``, ``events``, ...
    """


# -- Tracking: where the registry of agents lives -----------------------------------


@collects(RegistryStore)
def pao_registry_stores(config: PaoConfig) -> Iterable[RegistryStore] | None:
    """Return the agent registry stores this plugin provides.

    Called once per command that reads or writes agents, before the first read. pao
    keeps its agents in the first store, in call order, whose ``schemes`` hold the
    scheme of ``[registry] url`` (``PAO_REGISTRY_URL``), or ``""`` when no URL is set
    (pao's own JSON file under ``PAO_HOME``). A URL that no store serves is an error,
    never a fall back to the file. Must be cheap: connect lazily, on the first read.

    :param config: the effective configuration (``config.registry.url``, ``config.machine_name()``).
    :returns: stores following ``pao_core.contracts.RegistryStore``.
    """
