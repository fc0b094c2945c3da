"""The plugin manager: entry points loaded once, default plugins registered explicitly.

Plugins are found through the ``pao`` entry-point group. ``PAO_LOAD_PLUGINS`` (a
comma list of distribution names; set but empty loads none) limits which are
loaded, ``PAO_DISABLE_PLUGINS`` (distribution or plugin names) blocks some. A plugin
that fails to import, or whose hook raises, is recorded and reported by
``pao plugins``; the others keep working.

Hooks are called through pluggy itself, so call order, ``tryfirst``/``trylast``,
``firstresult`` and ``wrapper=True`` implementations work as pluggy documents. What
pao adds happens once, when a plugin is registered: each implementation is wrapped so
that its exception is recorded (and it answers ``None``, which pluggy skips), and what
a collection hook returns is checked against the contract its spec names
(``hookspecs.RETURNS``); an object that is not one is recorded and dropped.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping

import attrs
import pluggy

from pao_core import hookspecs
from pao_core.errors import describe

if TYPE_CHECKING:
    import argparse

    from pao_core.config import ConfigTable, PaoConfig
    from pao_core.contracts import (BriefingSection, HostAgent, MemoryBackend, ReadinessDetector, RegistryStore,
                                    TerminalDriver)
    from pao_core.models import AgentRecord, Briefing, McpServer, SpawnRequest

ENTRY_POINT_GROUP = "pao"

DEFAULT_PLUGINS: tuple[str, ...] = (
    "pao_core.commands.info",
    "pao_core.commands.brief",
    "pao_core.commands.agents",
    "pao_core.commands.evaluate",
    "pao_core.commands.doctor",
    "pao_core.sections",
    "pao_core.registry",
)
"""Modules of pao_core registered as plugins on every run, in this order."""

Record = Callable[[BaseException], None]


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


class IsolatingManager(pluggy.PluginManager):
    """pluggy's manager, with each hook implementation's failure isolated and recorded."""

    def __init__(self, project_name: str, record: Callable[[str, str, BaseException], None]) -> None:
        super().__init__(project_name)
        self._record = record

    def register(self, plugin: object, name: str | None = None) -> str | None:
        registered = super().register(plugin, name)
        for caller in self.get_hookcallers(plugin) or ():
            for impl in caller.get_hookimpls():
                if impl.plugin is plugin:
                    record = functools.partial(self._record, impl.plugin_name, caller.name)
                    impl.function = _isolated(impl, hookspecs.RETURNS.get(caller.name), record)
        return registered


def _isolated(impl: pluggy.HookImpl, contract: type | None, record: Record) -> Callable[..., Any]:
    """``impl``'s function, recording its exception (answering ``None``) and checking what it returns."""
    function = impl.function
    if impl.wrapper or impl.hookwrapper:
        return _isolated_wrapper(function, record)

    @functools.wraps(function)
    def call(*args: Any) -> Any:
        try:
            result = function(*args)
            return result if contract is None or result is None else checked(result, contract, record)
        except Exception as exc:  # a plugin's bug must not break the others
            record(exc)
            return None

    return call


def _isolated_wrapper(function: Callable[..., Iterator[Any]], record: Record) -> Callable[..., Any]:
    """A wrapper implementation whose failure, before or after its ``yield``, leaves the result as it was."""

    @functools.wraps(function)
    def wrapper(*args: Any) -> Iterator[Any]:
        try:
            generator = function(*args)
            next(generator)
        except Exception as exc:  # includes StopIteration: a wrapper that never yields
            record(exc)
            return (yield)
        try:
            result = yield
        except BaseException:  # the call itself was interrupted: nothing of the plugin's to record
            generator.close()
            raise
        try:
            generator.send(result)
        except StopIteration as stop:
            return stop.value
        except Exception as exc:
            record(exc)
            return result
        generator.close()
        record(RuntimeError("the wrapper yielded more than once"))
        return result

    return wrapper


def checked(result: Any, contract: type, record: Record) -> list[Any]:
    """What a collection hook returned, as a list of ``contract`` objects; anything else is recorded."""
    if isinstance(result, (str, bytes, Mapping)) or not isinstance(result, Iterable):
        raise TypeError(f"returned {type(result).__name__}, not a list of {contract.__name__}")
    objects = []
    for obj in result:
        if isinstance(obj, contract):
            objects.append(obj)
        else:
            record(TypeError(f"returned a {type(obj).__name__}, not a {contract.__module__}.{contract.__qualname__}"))
    return objects


@attrs.define
class Plugins:
    """The loaded plugins of one ``pao`` process, and one typed method per hook."""

    manager: IsolatingManager = attrs.field(init=False)
    sources: dict[str, PluginSource] = attrs.field(factory=dict)
    failures: list[PluginFailure] = attrs.field(factory=list)
    limited: bool = False
    """Plugin loading was limited by ``PAO_LOAD_PLUGINS`` or ``PAO_DISABLE_PLUGINS``."""
    _lock: threading.Lock = attrs.field(factory=threading.Lock, repr=False)

    def __attrs_post_init__(self) -> None:
        self.manager = IsolatingManager(ENTRY_POINT_GROUP, self.record_failure)
        self.manager.add_hookspecs(hookspecs)

    @property
    def complete(self) -> bool:
        """Every installed plugin is loaded (none limited, none failed to load)."""
        return not self.limited and not any(f.stage == "load" for f in self.failures)

    # -- hooks, one method each --------------------------------------------------

    def config_tables(self) -> list[ConfigTable]:
        return self.collect("pao_config_tables")

    def add_commands(self, subparsers: argparse._SubParsersAction, config: PaoConfig) -> None:
        self.manager.hook.pao_add_commands(subparsers=subparsers, config=config)

    def memory_backends(self, config: PaoConfig) -> list[MemoryBackend]:
        return self.collect("pao_memory_backends", config=config)

    def load_corpus(self, corpus: Path, config: PaoConfig) -> list[str]:
        return self.manager.hook.pao_load_corpus(corpus=corpus, config=config)

    def briefing_sections(self, config: PaoConfig) -> list[BriefingSection]:
        return self.collect("pao_briefing_sections", config=config)

    def briefing_written(self, briefing: Briefing, folder: str, path: str) -> None:
        self.manager.hook.pao_briefing_written(briefing=briefing, folder=folder, path=path)

    def host_agents(self, config: PaoConfig) -> list[HostAgent]:
        """One profile per name: the first in call order (an installed plugin's before pao's own)."""
        return _first_of_each_name(self.collect("pao_host_agents", config=config))

    def terminal_drivers(self, config: PaoConfig) -> list[TerminalDriver]:
        """One driver per name: the first in call order."""
        return _first_of_each_name(self.collect("pao_terminal_drivers", config=config))

    def readiness_detectors(self, config: PaoConfig) -> list[ReadinessDetector]:
        return self.collect("pao_readiness_detectors", config=config)

    def session_mcp_servers(self, config: PaoConfig, request: SpawnRequest) -> list[McpServer]:
        return self.collect("pao_session_mcp_servers", config=config, request=request)

    def agent_spawned(self, record: AgentRecord) -> None:
        self.manager.hook.pao_agent_spawned(record=record)

    def agent_state_changed(self, record: AgentRecord, old_state: str, new_state: str, source: str) -> None:
        self.manager.hook.pao_agent_state_changed(record=record, old_state=old_state, new_state=new_state, source=source)

    def registry_stores(self, config: PaoConfig) -> list[RegistryStore]:
        return self.collect("pao_registry_stores", config=config)

    # -- machinery -----------------------------------------------------------------

    def record_failure(self, plugin: str, stage: str, exc: BaseException) -> None:
        with self._lock:
            self.failures.append(PluginFailure(plugin, stage, describe(exc)))

    def collect(self, hook_name: str, *, only: str | None = None, **kwargs: Any) -> list[Any]:
        """The objects a collection hook's implementations returned, in pluggy's call order.

        ``only`` names one plugin whose implementation alone is called (``pao plugins``).
        """
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

    def describe(self) -> list[dict[str, Any]]:
        """Every registered plugin with its source and the hooks it implements."""
        rows = []
        for name, plugin in self.manager.list_name_plugin():
            if plugin is None:
                continue
            source = self.sources.get(name, PluginSource(None, None))
            hooks = sorted(impl_name for impl_name in _implemented_hooks(self.manager, plugin))
            rows.append(
                {
                    "name": name,
                    "distribution": source.distribution,
                    "version": source.version,
                    "default": source.default,
                    "hooks": hooks,
                }
            )
        return rows


def _first_of_each_name(objects: list[Any]) -> list[Any]:
    chosen: dict[str, Any] = {}
    for obj in objects:
        chosen.setdefault(obj.name, obj)
    return list(chosen.values())


def _implemented_hooks(manager: pluggy.PluginManager, plugin: object) -> Iterable[str]:
    for caller in manager.get_hookcallers(plugin) or ():
        yield caller.name


def _env_list(environ: Mapping[str, str], name: str) -> set[str] | None:
    if name not in environ:
        return None
    return {part.strip() for part in environ[name].split(",") if part.strip()}


def _normalise(dist_name: str) -> str:
    return dist_name.lower().replace("_", "-").replace(".", "-")


def build_plugins(environ: Mapping[str, str] | None = None) -> Plugins:
    """Make a plugin manager, register the defaults, load entry points (once)."""
    env = os.environ if environ is None else environ
    plugins = Plugins()
    manager = plugins.manager
    for module_name in DEFAULT_PLUGINS:
        module = importlib.import_module(module_name)
        manager.register(module, name=module_name)
        plugins.sources[module_name] = PluginSource("pao-core", _version("pao-core"), default=True)

    wanted = _env_list(env, "PAO_LOAD_PLUGINS")
    disabled = _env_list(env, "PAO_DISABLE_PLUGINS") or set()
    wanted_norm = {_normalise(n) for n in wanted} if wanted is not None else None
    plugins.limited = wanted is not None or bool(disabled)
    disabled_norm = {_normalise(n) for n in disabled}
    for entry_point, dist, dist_version in installed_entry_points():
        dist_norm = _normalise(dist) if dist else ""
        if wanted_norm is not None and dist_norm not in wanted_norm:
            continue
        if dist_norm in disabled_norm or _normalise(entry_point.name) in disabled_norm:
            manager.set_blocked(entry_point.name)
            continue
        if manager.has_plugin(entry_point.name) or manager.is_blocked(entry_point.name):
            continue
        try:
            plugin = entry_point.load()
            manager.register(plugin, name=entry_point.name)
        except Exception as exc:  # a broken plugin is reported, the rest still load
            manager.set_blocked(entry_point.name)
            plugins.failures.append(PluginFailure(entry_point.name, "load", describe(exc)))
            continue
        plugins.sources[entry_point.name] = PluginSource(dist, dist_version)
    manager.check_pending()
    return plugins


def installed_entry_points() -> list[tuple[importlib.metadata.EntryPoint, str | None, str | None]]:
    """The ``pao`` entry points with their distribution's name and version, from a cache when nothing changed.

    Scanning every installed distribution's metadata costs more than the rest of
    ``pao --help``. The cache (in the user's cache folder) is keyed by the interpreter
    and the modification times of the folders on ``sys.path``, which change whenever a
    distribution is installed, upgraded or removed.
    """
    import json  # only this path needs it: start-up stays light
    import sys  # only this path needs it: start-up stays light

    import platformdirs  # only this path needs it: start-up stays light

    key = [sys.executable, *[[path, _mtime_ns(path)] for path in sys.path]]
    cache = Path(platformdirs.user_cache_dir("pao")) / "entry-points.json"
    try:
        cached = json.loads(cache.read_text(encoding="utf-8"))
        if cached["key"] == key:
            return [(importlib.metadata.EntryPoint(n, v, ENTRY_POINT_GROUP), d, dv) for n, v, d, dv in cached["points"]]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    found = [(ep, ep.dist.name if ep.dist else None, ep.dist.version if ep.dist else None)
             for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)]
    points = [[ep.name, ep.value, dist, version] for ep, dist, version in found]
    try:  # a cache that cannot be written only costs the next run its scan
        cache.parent.mkdir(parents=True, exist_ok=True)
        temporary = cache.with_name(f".{cache.name}.{os.getpid()}")
        temporary.write_text(json.dumps({"key": key, "points": points}), encoding="utf-8")
        os.replace(temporary, cache)
    except OSError:
        pass
    return found


def _mtime_ns(path: str) -> int | None:
    try:
        return os.stat(path or ".").st_mtime_ns
    except OSError:
        return None


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


_current: Plugins | None = None
_current_lock = threading.Lock()


def get_plugins() -> Plugins:
    """The process-wide plugins, built on first use."""
    global _current
    with _current_lock:
        if _current is None:
            _current = build_plugins()
        return _current


def reset_plugins() -> None:
    """Forget the process-wide plugins (tests, or after changing PAO_LOAD_PLUGINS)."""
    global _current
    with _current_lock:
        _current = None
