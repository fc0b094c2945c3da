"""``pao list`` before any plugin loads: no agent in ``agents.json``, said with the standard library.

``pao list`` runs many times a day, and its commonest answer needs none of the
plugin host, the configuration's records or the agent records (together most of the full
command's time). :func:`light_list` gives that answer only when the full command is certain to
give the same one, else returns ``None`` and the full command runs:

- the arguments are ``list`` or ``list --json``;
- no plugin but pao's own could route ``list`` or keep the registry elsewhere (pao-machines
  routes ``list`` only for agents on other machines; pao-postgres keeps registries at
  ``postgresql://`` URLs only), and pao-agents' ``agents.json`` store is installed;
- a full ``pao list`` found this very configuration valid, with the registry in
  ``agents.json``: same file content, same environment, same installed plugins (the
  check's digest, :func:`_digest`, in pao's cache folder);
- ``agents.json`` is missing or lists no agent.
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any, Mapping, Sequence

from pao_core.output import print_json, print_table
from pao_core.paths import cache_path, config_path, home_path

OWN_PLUGINS = {"pao_registry_stores": {"pao_agents.registry", "pao_postgres.hooks"},
               "pao_command_routers": {"pao_machines.hooks"}}
"""The hooks that could take ``list`` elsewhere, and the plugins (entry points) known to leave it here."""
CHECKED = "list-config.json"
LIST_FIELDS = ("host", "terminal")


def list_header(fields: Sequence[str] = LIST_FIELDS) -> list[str]:
    return ["NAME", "STATE", *map(str.upper, fields), "AGE", "FOLDER"]


def light_list(argv: Sequence[str], index: Mapping[str, Any]) -> int | None:
    """``pao list [--json]`` when no agent is registered and nothing else could change the answer; else ``None``."""
    if list(argv) not in (["list"], ["list", "--json"]) or not _own_registry_and_routers(index["plugins"]):
        return None
    try:
        with open(os.path.join(home_path(), "agents.json"), encoding="utf-8") as stream:
            document = json.loads(stream.read() or "{}")
    except FileNotFoundError:
        document = {}
    except (OSError, ValueError):  # the full command says what is wrong
        return None
    if not isinstance(document, dict) or document.get("agents", {}) != {}:
        return None
    try:
        digest = _digest(index, os.environ)
        if digest is None or _checked() != digest:
            return None
    except (OSError, ValueError):
        return None
    if argv[-1] == "--json":
        print_json({"agents": []})
    else:
        print_table(list_header(), [])
    return 0


def _own_registry_and_routers(plugins: Sequence[Mapping[str, Any]]) -> bool:
    if any(hook in entry["hooks"] and entry["value"] not in known for entry in plugins for hook, known in OWN_PLUGINS.items()):
        return False
    return any(entry["value"] == "pao_agents.registry" and "pao_registry_stores" in entry["hooks"] for entry in plugins)


def _digest(index: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, str] | None:
    """What checking the configuration depends on: the file, the environment it reads, the installed plugins and
    their tables (the plugin index's key and files); ``None`` when the index cannot say which tables there are."""
    import hashlib  # only this path needs it: start-up stays light

    if index.get("tables") is None:
        return None
    names = {"PAO_CONFIG", "PAO_HOME", "PAO_REGISTRY_URL"} | {name for *_, env in index["tables"] for name in env}
    path = config_path(environ)
    try:
        content = b"+" + path.read_bytes()
    except FileNotFoundError:
        content = b"-"
    digest = hashlib.sha256(json.dumps([index["key"], index["files"], index["tables"], str(path),
                                        {name: environ.get(name) for name in sorted(names)}]).encode())
    digest.update(content)
    return {"digest": digest.hexdigest()}


def _checked() -> Any:
    with open(cache_path(CHECKED), encoding="utf-8") as stream:
        return json.load(stream)


def remember_checked(config: Any, index: Mapping[str, Any] | None) -> None:
    """After a full ``pao list`` found the configuration valid, the next one may answer lightly (best effort)."""
    from pao_core.files import atomic_write  # only this path needs it: start-up stays light

    try:
        checked = None if index is None or config.registry.url else _digest(index, os.environ)
    except OSError:
        return
    with contextlib.suppress(OSError, ValueError):  # none yet, or unreadable: written again
        if checked is None or _checked() == checked:
            return
    with contextlib.suppress(OSError):
        os.makedirs(os.path.dirname(cache_path(CHECKED)), exist_ok=True)
        atomic_write(cache_path(CHECKED), json.dumps(checked), mode=0o600)
