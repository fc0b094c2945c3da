"""The plugin manager: entry points loaded once, default plugins registered explicitly.

Plugins are found through the ``pao`` entry-point group. ``PAO_LOAD_PLUGINS`` (a
comma list of distribution names; set but empty loads none) limits which are
loaded, ``PAO_DISABLE_PLUGINS`` (distribution or plugin names) blocks some. A plugin
that fails to import, or whose hook raises, is recorded and reported by
``pao plugins``; the others keep working.

Hooks are called through pluggy itself, so call order, ``tryfirst``/``trylast``,
``firstresult`` and ``wrapper=True`` implementations work as pluggy documents
(``pao_core.isolation`` records a failing implementation). After a complete load,
``pao_core.plugin_index`` keeps what was found, and later runs import a plugin only
when a hook it implements is called.
"""

from __future__ import annotations

import functools
import importlib
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

import attrs

from pao_core import hookspecs, plugin_index
from pao_core.errors import describe
from pao_core.isolation import IsolatingManager, checked
from pao_core.tables import ConfigTable
from pao_core.plugin_index import ENTRY_POINT_GROUP

if TYPE_CHECKING:
    import argparse

    from pao_core.config import PaoConfig
    from pao_core.contracts import BriefingDeliverer, BriefingSection, Check, CommandRouter, MemoryBackend
    from pao_core.models import Briefing

DEFAULT_PLUGINS: tuple[str, ...] = (
    "pao_core.commands.info",
    "pao_core.commands.brief",
    "pao_core.commands.doctor",
    "pao_core.sections",
)
"""Modules of pao_core registered as plugins on every run, in this order."""


@attrs.frozen
class PluginFailure:
    """A plugin that could not be loaded, or one of whose hooks raised."""

    plugin: str
    stage: str
    error: str


@attrs.frozen
class PluginSource:
    """Where a loaded plugin came from."""

    distribution: str | None
    version: str | None
    default: bool = False
    value: str | None = attrs.field(default=None, eq=False)
    """The entry point's ``module:attr`` (a default plugin's module name)."""


@attrs.define
class Plugins:
    """The plugins of one ``pao`` process, and one typed method per hook.

    Built from the plugin index (:mod:`pao_core.plugin_index`), a plugin is imported
    only when a hook it implements is first called, and registered in the order a
    complete load registers it, so pluggy's call order is the same either way.
    """

    manager: IsolatingManager = attrs.field(init=False)
    sources: dict[str, PluginSource] = attrs.field(factory=dict)
    failures: list[PluginFailure] = attrs.field(factory=list)
    limited: bool = False
    """Plugin loading was limited by ``PAO_LOAD_PLUGINS`` or ``PAO_DISABLE_PLUGINS``."""
    index: dict[str, Any] | None = None
    """The plugin index this was built from (plugins, commands, tables), or ``None`` after a complete load."""
    _lock: threading.Lock = attrs.field(factory=threading.Lock, repr=False)
    _loading: threading.RLock = attrs.field(factory=threading.RLock, repr=False)
    _pending: dict[str, dict[str, Any]] = attrs.field(factory=dict, repr=False)
    _order: dict[str, int] = attrs.field(factory=dict, repr=False)
    _index_written: list[Any] = attrs.field(factory=list, repr=False)  # where and under what key, once per process

    def __attrs_post_init__(self) -> None:
        self.manager = IsolatingManager(ENTRY_POINT_GROUP, self.record_failure)
        self.manager.add_hookspecs(hookspecs)
        # historic: each plugin registered later (imported on use, or not) adds its hooks as it registers
        getattr(self.manager.hook, "pao_addhooks").call_historic(kwargs={"pluginmanager": self.manager})
        if self.index is not None:
            self._pending = {entry["name"]: entry for entry in self.index["plugins"]}
            self._order = {name: position for position, name in enumerate(self._pending)}

    @property
    def complete(self) -> bool:
        """Every installed plugin is loaded (none limited, none failed to load)."""
        return not self.limited and not any(f.stage == "load" for f in self.failures)

    @property
    def catalog(self) -> dict[str, Any] | None:
        """The index's commands and tables, while no plugin was registered beside it (by hand, in tests)."""
        if self.index is None or any(name not in self._order for name, _ in self.manager.list_name_plugin()):
            return None
        return self.index

    # -- hooks, one method each (through ``_hook`` or ``collect``: they import what the hook needs) --

    def config_tables(self) -> list[ConfigTable]:
        if self.catalog is not None and self.catalog["tables"] is not None:
            return [ConfigTable(kind, name, options, env) for kind, name, options, env in self.catalog["tables"]]
        return self.collect("pao_config_tables")

    def add_commands(self, subparsers: argparse._SubParsersAction, config: PaoConfig, only: str | None = None) -> None:
        """Every plugin's commands, or ``only`` that plugin's."""
        if only is None:
            self._hook("pao_add_commands")(subparsers=subparsers, config=config)
        else:
            self.load("pao_add_commands", only=only)
            self.manager.subset_hook_caller("pao_add_commands", self._others(only))(subparsers=subparsers, config=config)

    def command_routers(self, config: PaoConfig) -> list[CommandRouter]:
        return self.collect("pao_command_routers", config=config)

    def memory_backends(self, config: PaoConfig) -> list[MemoryBackend]:
        return self.collect("pao_memory_backends", config=config)

    def load_corpus(self, corpus: Path, config: PaoConfig) -> list[str]:
        return self._hook("pao_load_corpus")(corpus=corpus, config=config)

    def briefing_sections(self, config: PaoConfig) -> list[BriefingSection]:
        return self.collect("pao_briefing_sections", config=config)

    def briefing_deliverers(self, config: PaoConfig) -> list[BriefingDeliverer]:
        return self.collect("pao_briefing_deliverers", config=config, plugins=self)

    def briefing_written(self, briefing: Briefing, folder: str, path: str) -> None:
        self._hook("pao_briefing_written")(briefing=briefing, folder=folder, path=path)

    def doctor_checks(self, config: PaoConfig) -> list[Check]:
        return self.collect("pao_doctor_checks", config=config, plugins=self)

    # -- loading on use ------------------------------------------------------------

    def call(self, hook_name: str, **kwargs: Any) -> Any:
        """Call a hook a plugin added (``pao_addhooks``) by its name: what its implementations returned."""
        return self._hook(hook_name)(**kwargs)

    def _hook(self, name: str) -> Any:
        self.load(name)
        return getattr(self.manager.hook, name)

    def load(self, hook: str | None = None, *, only: str | None = None) -> None:
        """Import and register the indexed plugins that implement ``hook`` (``only`` that one; neither: all).

        A plugin that belongs before one already registered is registered with the later
        ones again after it, so each hook's implementations keep a complete load's order.
        """
        with self._loading:
            if getattr(getattr(self.manager.hook, hook or "", None), "spec", None) is None:  # a hook a plugin adds
                self.load("pao_addhooks")  # (or all of them): its specification is added before it is called
            wanted = [name for name, entry in self._pending.items()
                      if (only is None or name == only) and (hook is None or hook in entry["hooks"])]
            if not wanted:
                return
            first = self._order[wanted[0]]
            later = [(name, plugin) for name, plugin in self.manager.list_name_plugin()
                     if plugin is not None and self._order.get(name, len(self._order)) > first]
            for name, plugin in later:
                self.manager.unregister(plugin, name)
            batch = {name: None for name in wanted} | dict(later)
            for name in sorted(batch, key=lambda n: self._order.get(n, len(self._order))):
                plugin = batch[name]
                if plugin is not None:
                    self.manager.register(plugin, name=name)
                    continue
                entry = self._pending.pop(name)
                self.register_loaded(name, functools.partial(plugin_index.load_object, entry["value"]),
                                     PluginSource(entry["distribution"], entry["version"], entry["default"], entry["value"]))

    def register_loaded(self, name: str, load: Callable[[], object], source: PluginSource) -> None:
        """Register what ``load()`` imports as plugin ``name`` from ``source``; a plugin that fails to load is
        recorded and blocked, and the rest still load."""
        try:
            self.manager.register(load(), name=name)
        except Exception as exc:  # a broken plugin is reported, the rest still load
            self.manager.set_blocked(name)
            self.failures.append(PluginFailure(name, "load", describe(exc)))
            return
        self.sources[name] = source

    # -- machinery -----------------------------------------------------------------

    def record_failure(self, plugin: str, stage: str, exc: BaseException) -> None:
        with self._lock:
            self.failures.append(PluginFailure(plugin, stage, describe(exc)))

    def collect(self, hook_name: str, *, only: str | None = None, **kwargs: Any) -> list[Any]:
        """The objects a collection hook's implementations returned, in pluggy's call order.

        ``only`` names one plugin whose implementation alone is called (``pao plugins``).
        """
        self.load(hook_name)
        caller = self.manager.subset_hook_caller(hook_name, self._others(only)) if only else getattr(self.manager.hook, hook_name)
        contract = hookspecs.RETURNS[hook_name]
        objects = []
        for result in caller(**kwargs):
            try:
                objects.extend(checked(result, contract, functools.partial(self.record_failure, "wrapper", hook_name)))
            except TypeError as exc:  # a wrapper replaced the results with something else
                self.record_failure("wrapper", hook_name, exc)
        return objects

    def _others(self, name: str) -> list[object]:
        return [plugin for other, plugin in self.manager.list_name_plugin() if other != name and plugin is not None]

    def registered(self) -> list[tuple[str, PluginSource | None, list[str]]]:
        """Each registered plugin's name, source (``None``: registered by hand) and the hooks it implements."""
        return [(name, self.sources.get(name), sorted(caller.name for caller in self.manager.get_hookcallers(plugin) or ()))
                for name, plugin in self.manager.list_name_plugin() if plugin is not None]

    def describe(self) -> list[dict[str, Any]]:
        """Every registered plugin with its source and the hooks it implements."""
        self.load()
        return [_row(name, source or PluginSource(None, None), hooks) for name, source, hooks in self.registered()]


def _row(name: str, source: PluginSource, hooks: list[str]) -> dict[str, Any]:
    return {"name": name, "distribution": source.distribution, "version": source.version, "default": source.default,
            "hooks": hooks}


def build_plugins(environ: Mapping[str, str] | None = None) -> Plugins:
    """Make a plugin manager, register the defaults, load entry points (once)."""
    env = os.environ if environ is None else environ
    plugins = Plugins()
    manager = plugins.manager
    core_version = plugin_index.installed_version("pao-core")
    for module_name in DEFAULT_PLUGINS:
        module = importlib.import_module(module_name)
        manager.register(module, name=module_name)
        plugins.sources[module_name] = PluginSource("pao-core", core_version, default=True, value=module_name)

    wanted_norm, disabled_norm = plugin_index.limits(env)
    plugins.limited = wanted_norm is not None or bool(disabled_norm)
    for entry_point, dist, dist_version in plugin_index.scan_entry_points():
        dist_norm = plugin_index.normalise(dist) if dist else ""
        if wanted_norm is not None and dist_norm not in wanted_norm:
            continue
        if dist_norm in disabled_norm or plugin_index.normalise(entry_point.name) in disabled_norm:
            manager.set_blocked(entry_point.name)
            continue
        if manager.has_plugin(entry_point.name) or manager.is_blocked(entry_point.name):
            continue
        source = PluginSource(dist, dist_version, value=entry_point.value)
        plugins.register_loaded(entry_point.name, entry_point.load, source)
    manager.check_pending()
    return plugins


def indexed_plugins(environ: Mapping[str, str], index: dict[str, Any] | None = None) -> Plugins | None:
    """Plugins that import themselves on use, from the plugin index (``index``: as just read) while it holds; else ``None``."""
    index = index or plugin_index.read_index(environ)
    if index is None:
        return None
    wanted_norm, disabled_norm = plugin_index.limits(environ)
    return Plugins(limited=wanted_norm is not None or bool(disabled_norm), index=index)


def save_index(plugins: Plugins, config: PaoConfig, environ: Mapping[str, str] | None = None) -> None:
    """After a complete load, write the plugin index the next runs start from (not when anything failed)."""
    environ = os.environ if environ is None else environ
    written = [plugin_index.cache_file(), plugin_index.index_key(environ)]
    catalog = None if plugins._index_written == written and os.path.exists(written[0]) else catalog_of(plugins, config)
    if catalog is not None:
        plugin_index.write_index(environ, catalog)
        plugins._index_written = written


def catalog_of(plugins: Plugins, config: PaoConfig) -> dict[str, Any] | None:
    """What the plugin index keeps of a complete load: ``None`` when anything failed (never cached)."""
    manager = plugins.manager
    registered = plugins.registered()
    if plugins.index is not None or any(source is None or source.value is None for _, source, _ in registered):
        return None  # loaded on use, or a plugin registered by hand: not what is installed
    entries = [{**_row(name, source, hooks), "value": source.value} for name, source, hooks in registered]
    commands = []
    for impl in reversed(manager.hook.pao_add_commands.get_hookimpls()):  # pluggy's call order
        caller = manager.subset_hook_caller("pao_add_commands", plugins._others(impl.plugin_name))
        recorded = recorded_commands(lambda subparsers, caller=caller: caller(subparsers=subparsers, config=config))
        commands += [[*command, impl.plugin_name] for command in recorded]
    tables: list[list[Any]] | None = []
    for table in plugins.collect("pao_config_tables"):
        options = table.options if isinstance(table.options, str) else f"{table.options.__module__}:{table.options.__qualname__}"
        if "<" in options:  # a class that cannot be imported by its name: ask the plugins on every run
            tables = None
            break
        tables.append([table.kind, table.name, options, dict(table.env)])
    named = {key: {name: sorted({function for found in getattr(manager.hook, f"pao_{key}")(command=name)
                                 if isinstance(found, (list, tuple)) for function in found if isinstance(function, str)})
                   for name, *_ in commands} for key in ("ahead", "shortcuts")}  # what pao_ahead, pao_shortcuts name
    taken = [router.commands for router in plugins.command_routers(config)]  # what the routers may take: the others
    named_only = all(isinstance(names, frozenset) and all(isinstance(name, str) for name in names) for names in taken)
    routed = sorted(set().union(*taken)) if named_only else None  # never load a router (None: every command asks)
    if plugins.failures:
        return None
    version = next((source.version for _, source, _ in registered if source.default), None)
    return {"plugins": entries, "commands": commands, "tables": tables, "version": version, "routed": routed,
            **{key: {name: found for name, found in by_command.items() if found} for key, by_command in named.items()}}


def recorded_commands(add_commands: Any) -> list[list[Any]]:
    """``[name, help or None, aliases, light]`` for each command ``add_commands(subparsers)`` adds, in its order.

    ``light``: the ``module:function`` its parser names in ``set_defaults(light=...)``, which
    ``pao`` calls with the arguments and the plugin index before any plugin loads; it answers
    the command (an exit code) or returns ``None`` when only the full command can."""
    import argparse  # the parser is what records the commands

    subparsers = argparse.ArgumentParser(prog="pao").add_subparsers()
    add_commands(subparsers)
    helps = {action.dest: action.help for action in subparsers._choices_actions}
    names: dict[int, list[str]] = {}
    for name, parser in subparsers.choices.items():
        names.setdefault(id(parser), []).append(name)
    return [[first, helps.get(first), aliases, subparsers.choices[first].get_default("light")]
            for first, *aliases in names.values()]


_current: Plugins | None = None
_current_lock = threading.Lock()


def get_plugins(index: dict[str, Any] | None = None) -> Plugins:
    """The process-wide plugins, built on first use (from ``index``, the plugin index just read, if any)."""
    global _current
    with _current_lock:
        if _current is None:
            _current = indexed_plugins(os.environ, index) or build_plugins()
        return _current


def load_config(environ: Mapping[str, str] | None = None, tables: Iterable[ConfigTable] | None = None, *,
                strict_tables: bool | None = None) -> PaoConfig:
    """The configuration with the plugins' tables (``tables`` None: the process-wide plugins', strict when they
    all loaded); :func:`pao_core.config.read_config` reads and validates it."""
    from pao_core.config import read_config  # cattrs: not for --help or the index

    if tables is None:
        plugins = get_plugins()
        tables, strict_tables = plugins.config_tables(), plugins.complete if strict_tables is None else strict_tables
    return read_config(environ, tables, strict_tables=bool(strict_tables))


def reset_plugins() -> None:
    """Forget the process-wide plugins (tests, or after changing PAO_LOAD_PLUGINS)."""
    global _current
    with _current_lock:
        _current = None
