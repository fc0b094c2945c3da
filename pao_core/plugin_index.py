"""What the installed plugins provide, cached so that start-up imports none of them.

``pao --help`` needs each command's name and one-line help, ``pao COMMAND`` the plugin
that adds COMMAND, and a hook call the plugins that implement that hook. Importing every
plugin (with pluggy, attrs and what each plugin imports) costs more than the rest of most
commands, so a complete load writes what it found here (every plugin in load order with
its distribution, version and hooks, the commands in the parser's order, the declared
configuration tables) and later runs read it with the standard library alone.

The index holds only while its key does: the interpreter, the name and modification time
of every distribution's metadata folder (``*.dist-info``, ``*.egg-info``) in every folder
on ``sys.path`` (installing, upgrading or removing a distribution makes, renames or
replaces one), ``PAO_LOAD_PLUGINS`` and ``PAO_DISABLE_PLUGINS``, and the
modification time and size of every non-standard-library module file loaded while it
was built (an edited plugin of an editable install). A load with any failure is never
written: ``pao plugins`` and ``pao doctor`` see it on every run.
"""

from __future__ import annotations

import json
import os
import sys
import sysconfig
from typing import TYPE_CHECKING, Any, Mapping

from pao_core.paths import cache_path

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_core.plugins import Plugins

ENTRY_POINT_GROUP = "pao"
FORMAT = 2


def cache_file() -> str:
    return cache_path("plugins.json")


def _distributions(path: str) -> Any:
    """The distributions' metadata folders in ``path`` with their mtimes (a zip: its own mtime)."""
    try:
        with os.scandir(path or ".") as entries:
            return sorted([entry.name, entry.stat().st_mtime_ns] for entry in entries
                          if entry.name.endswith((".dist-info", ".egg-info")))
    except NotADirectoryError:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def index_key(environ: Mapping[str, str]) -> list[Any]:
    return [FORMAT, sys.executable, [[path, _distributions(path)] for path in sys.path],
            environ.get("PAO_LOAD_PLUGINS"), environ.get("PAO_DISABLE_PLUGINS")]


def read_index(environ: Mapping[str, str]) -> dict[str, Any] | None:
    """The cached index when its key still holds, else ``None``."""
    try:
        with open(cache_file(), encoding="utf-8") as stream:
            index = json.load(stream)
        if index["key"] != index_key(environ):
            return None
        for path, mtime_ns, size in index["files"]:
            status = os.stat(path)
            if status.st_mtime_ns != mtime_ns or status.st_size != size:
                return None
        return index
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_index(environ: Mapping[str, str], catalog: Mapping[str, Any]) -> None:
    """Cache ``catalog`` (plugins, commands, tables, version) under the current key; best effort."""
    index = {"key": index_key(environ), "files": _loaded_files(), **catalog}
    path = cache_file()
    temporary = f"{path}.{os.getpid()}.tmp"
    try:  # an index that cannot be written only costs the next run a complete load
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(temporary, "w", encoding="utf-8") as stream:
            json.dump(index, stream)
        os.replace(temporary, path)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass


def _loaded_files() -> list[list[Any]]:
    """Every imported module's file, with its mtime and size, but the standard library's and site-packages'
    (which change with a distribution's metadata): an editable install's or a ``PYTHONPATH`` folder's modules."""
    paths = sysconfig.get_paths()
    fixed = tuple({os.path.realpath(paths[name]) + os.sep for name in ("stdlib", "platstdlib", "purelib", "platlib")})
    files = []
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not path or os.path.realpath(path).startswith(fixed):
            continue
        try:
            status = os.stat(path)
        except OSError:
            continue
        files.append([path, status.st_mtime_ns, status.st_size])
    return sorted(files)


def scan_entry_points() -> list[tuple[Any, str | None, str | None]]:
    """The ``pao`` entry points with their distribution's name and version (reads every installed metadata)."""
    import importlib.metadata  # only a complete load needs it: start-up stays light

    return [(ep, ep.dist.name if ep.dist else None, ep.dist.version if ep.dist else None)
            for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)]


def load_object(value: str) -> Any:
    """What an entry point's ``module:attr.path`` names, as ``EntryPoint.load`` resolves it."""
    import functools  # only a plugin import needs it
    import importlib  # only a plugin import needs it

    module, _, attr = value.split("[", 1)[0].strip().partition(":")
    return functools.reduce(getattr, filter(None, attr.strip().split(".")), importlib.import_module(module.strip()))


def recorded_commands(add_commands: Any) -> list[list[Any]]:
    """``[name, help or None, aliases, light]`` for each command ``add_commands(subparsers)`` adds, in its order.

    ``light``: the ``module:function`` its parser names in ``set_defaults(light=...)``, which
    ``pao`` calls with the arguments and this index before any plugin loads; it answers the
    command (an exit code) or returns ``None`` when only the full command can."""
    import argparse  # the parser is what records the commands

    subparsers = argparse.ArgumentParser(prog="pao").add_subparsers()
    add_commands(subparsers)
    helps = {action.dest: action.help for action in subparsers._choices_actions}
    names: dict[int, list[str]] = {}
    for name, parser in subparsers.choices.items():
        names.setdefault(id(parser), []).append(name)
    return [[first, helps.get(first), aliases, subparsers.choices[first].get_default("light")]
            for first, *aliases in names.values()]


def catalog_of(plugins: Plugins, config: PaoConfig) -> dict[str, Any] | None:
    """What the index keeps of a complete load: ``None`` when anything failed (never cached)."""
    manager = plugins.manager
    registered = [(name, plugin, plugins.sources.get(name)) for name, plugin in manager.list_name_plugin()
                  if plugin is not None]
    if plugins.index is not None or any(source is None or source.value is None for _, _, source in registered):
        return None  # loaded on use, or a plugin registered by hand: not what is installed
    entries = [{"name": name, "value": source.value, "distribution": source.distribution, "version": source.version,
                "default": source.default, "hooks": sorted(caller.name for caller in manager.get_hookcallers(plugin))}
               for name, plugin, source in registered]
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
    ahead = {name: sorted({function for found in manager.hook.pao_ahead(command=name) if isinstance(found, (list, tuple))
                           for function in found if isinstance(function, str)}) for name, *_ in commands}
    if plugins.failures:
        return None
    version = next((source.version for _, _, source in registered if source.default), None)
    return {"plugins": entries, "commands": commands, "tables": tables, "version": version,
            "ahead": {name: functions for name, functions in ahead.items() if functions}}
