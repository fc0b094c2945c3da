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
from typing import TYPE_CHECKING, Any, Callable, Iterable, Protocol, TypeVar

import pluggy

from pao_core.contracts import BriefingDeliverer, BriefingSection, Check, CommandRouter, MemoryBackend
from pao_core.tables import ConfigTable

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_core.models import Briefing

hookspec = pluggy.HookspecMarker("pao")
hookimpl = pluggy.HookimplMarker("pao")
F = TypeVar("F", bound=Callable[..., object])

class Plugins(Protocol):
    """What a hook handed ``plugins`` may call on them (:class:`pao_core.plugins.Plugins` is what it gets)."""

    def call(self, hook_name: str, **kwargs: Any) -> Any: ...

    def collect(self, hook_name: str, *, only: str | None = None, **kwargs: Any) -> list[Any]: ...


RETURNS: dict[str, type] = {}
"""Collection hook -> the contract each object it returns must be (``pao_core.plugins`` checks)."""


def collects(contract: type) -> Callable[[F], F]:
    """A hook that returns objects of ``contract``: what is not one is recorded and dropped."""

    def mark(spec: F) -> F:
        RETURNS[spec.__name__] = contract
        return hookspec(spec)

    return mark


# -- Start-up: the hooks plugins add, what a plugin reads from the configuration and adds to the command line


@hookspec(historic=True)
def pao_addhooks(pluginmanager: pluggy.PluginManager) -> None:
    """Add a plugin's own hook specifications with ``pluginmanager.add_hookspecs(module)``."""


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
def pao_shortcuts(command: str) -> Iterable[str] | None:
    """Name what may answer ``pao COMMAND`` before any plugin loads: ``"module:function"``, called with the arguments."""


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


# -- Checking: what ``pao doctor`` reports ---------------------------------------------


@hookspec
def pao_plugin_report(plugin: str, hooks: list[str], config: PaoConfig, plugins: Plugins) -> dict[str, Any] | None:
    """Add what ``pao plugins`` shows of one plugin: fields of its JSON row, and text ``lines``."""


@collects(Check)
def pao_doctor_checks(config: PaoConfig, plugins: Plugins) -> Iterable[Check] | None:
    """Add findings to ``pao doctor`` about what this plugin keeps."""
