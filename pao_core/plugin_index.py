"""What the installed plugins provide, cached so that start-up imports none of them.

``pao --help`` needs each command's name and one-line help, ``pao COMMAND`` the plugin
that adds COMMAND, and a hook call the plugins that implement that hook. Importing every
plugin (with pluggy, attrs and what each plugin imports) costs more than the rest of most
commands, so a complete load writes what it found here (every plugin in load order with
its distribution, version and hooks, the commands in the parser's order, the declared
configuration tables) and later runs read it with the standard library alone.

The index holds only while its key does: the interpreter, the name and modification time of every distribution's
metadata folder (``*.dist-info``, ``*.egg-info``) in every folder on ``sys.path`` that holds one (pao, ``pao mcp`` and
a hook's recorder start sys.path with different folders holding none, and share one index; installing, upgrading or
removing a distribution makes, renames or replaces one), ``PAO_LOAD_PLUGINS`` and ``PAO_DISABLE_PLUGINS``, and the
modification time and size of every non-standard-library module file loaded while it
was built (an edited plugin of an editable install). A load with any failure is never
written: ``pao plugins`` and ``pao doctor`` see it on every run.

The index also remembers which distribution added each command in this and earlier loads
(``known``), so that ``pao COMMAND`` can say which plugin is missing when one that was
installed is gone or left out. What a complete load records is built by
:func:`pao_core.plugins.catalog_of`; this module reads and writes it with the standard library.
"""

from __future__ import annotations

import json
import os
import sys
import sysconfig
from typing import Any, Mapping

from pao_core.paths import cache_path

ENTRY_POINT_GROUP = "pao"
FORMAT = 3


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
    paths = [[path, found] for path in sys.path if (found := _distributions(path))]  # see the module's doc: "holds one"
    return [FORMAT, sys.executable, paths, environ.get("PAO_LOAD_PLUGINS"), environ.get("PAO_DISABLE_PLUGINS")]


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
    distributions = {entry["name"]: entry["distribution"] for entry in catalog["plugins"]}
    known = _known() | {word: distributions[provider] for name, _, aliases, _, provider in catalog["commands"]
                        for word in (name, *aliases) if distributions.get(provider)}
    index = {"key": index_key(environ), "files": loaded_files(), **catalog, "known": known}
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


def _known() -> dict[str, str]:
    """Each command an earlier complete load found, with the distribution that added it (the index's key aside)."""
    try:
        with open(cache_file(), encoding="utf-8") as stream:
            known = json.load(stream).get("known")
    except (OSError, ValueError, AttributeError):
        return {}
    if not isinstance(known, dict):
        return {}
    return {word: dist for word, dist in known.items() if isinstance(word, str) and isinstance(dist, str)
            and dist.isascii() and normalise(dist).replace("-", "").isalnum()}  # a name, nothing a terminal runs


def missing_plugin(command: str, loaded: set[str | None], failed: bool, environ: Mapping[str, str]) -> str | None:
    """Why ``pao COMMAND`` is not available, when a distribution not ``loaded`` now added it before; else ``None``."""
    dist = _known().get(command)
    if dist is None or dist in loaded:
        return None
    wanted, disabled = limits(environ)
    if (wanted is not None and normalise(dist) not in wanted) or normalise(dist) in disabled:
        why = "is not loaded: PAO_LOAD_PLUGINS or PAO_DISABLE_PLUGINS leaves it out"
    else:
        why = "is not installed, or did not load ('pao plugins' lists what failed)" if failed else "is not installed"
    return f"'pao {command}' is not available: the plugin that provides it ({dist}) {why}"


def _env_list(environ: Mapping[str, str], name: str) -> set[str] | None:
    if name not in environ:
        return None
    return {part.strip() for part in environ[name].split(",") if part.strip()}


def normalise(dist_name: str) -> str:
    return dist_name.lower().replace("_", "-").replace(".", "-")


def limits(environ: Mapping[str, str]) -> tuple[set[str] | None, set[str]]:
    """The distributions ``PAO_LOAD_PLUGINS`` allows (``None``: all) and those ``PAO_DISABLE_PLUGINS`` blocks, normalised."""
    wanted = _env_list(environ, "PAO_LOAD_PLUGINS")
    disabled = _env_list(environ, "PAO_DISABLE_PLUGINS") or set()
    return ({normalise(n) for n in wanted} if wanted is not None else None), {normalise(n) for n in disabled}


def loaded_files() -> list[list[Any]]:
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


def installed_version(dist: str) -> str | None:
    """The installed version of distribution ``dist``; ``None`` when it is not installed."""
    import importlib.metadata  # only a --version or a complete load needs it: start-up stays light

    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def load_object(value: str) -> Any:
    """What an entry point's ``module:attr.path`` names, as ``EntryPoint.load`` resolves it."""
    import functools  # only a plugin import needs it
    import importlib  # only a plugin import needs it

    module, _, attr = value.split("[", 1)[0].strip().partition(":")
    return functools.reduce(getattr, filter(None, attr.strip().split(".")), importlib.import_module(module.strip()))
