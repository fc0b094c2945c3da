"""The agent registry: the store ``[registry] url`` chooses (``open_registry``), by default
``$PAO_HOME/agents.json``, one record per agent name.

Every change to the JSON file runs under the lock ``agents.json.lock`` (an ``flock`` the
kernel releases when its holder dies, :func:`pao_core.files.state_lock`), re-reads the
file, applies the change and replaces the file atomically (``pao_agents.spec.update_json``),
so two ``pao`` processes acting at once never lose an agent. Reads need no lock: a reader
sees the file before or after a replace. Other stores (PostgreSQL in pao-postgres) come
from the ``pao_registry_stores`` hook.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

import attrs
import cattrs

from pao_agents.spec.options import machine_name, registry_options
from pao_agents.spec.calls import registry_stores
from pao_agents.spec.marker import hookimpl as agent_hookimpl
from pao_core.paths import host_name
from pao_agents.spec.contracts import RegistryStore
from pao_core.errors import ConfigError, PaoError
from pao_agents.spec.errors import DuplicateAgent, UnknownAgent
from pao_core.files import private_dir
from pao_agents.jsonedit import UnreadableJSON, update_json
from pao_core.models import converter
from pao_agents.spec.records import AgentRecord

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_core.plugins import Plugins

__all__ = ["DuplicateAgent", "JsonRegistry", "UnknownAgent", "open_registry", "readable", "stamped", "structure_record"]

FILENAME = "agents.json"
FORMAT_VERSION = 1
FREE_NAME_TRIES = 10_000
LOCK_WAIT = 30.0
"""Seconds a change waits for the file's lock. A holder only reads, edits and replaces the file (a dead
one frees it at once), so a long wait means many writers at once, and waiting beats failing."""


def open_registry(config: PaoConfig, plugins: Plugins | None = None) -> RegistryStore:
    """The registry every command uses: the first store serving ``[registry] url``'s scheme."""
    if plugins is None:
        from pao_core.plugins import get_plugins  # pluggy, entry points: loaded on use

        plugins = get_plugins()
    url = registry_options(config).url
    scheme = url.partition("://")[0].lower() if url else ""
    stores = registry_stores(plugins, config)
    for store in stores:
        if scheme in store.schemes:
            return store
    from pao_core.sanitize import mask_url  # its patterns: only this error needs them

    served = sorted({s for store in stores for s in store.schemes if s})
    hint = "" if "postgresql" in served else "; pao-postgres serves postgresql://"
    raise ConfigError(f"registry.url {mask_url(url)}: no installed plugin keeps a registry there "
                      f"(schemes served: {', '.join(served) or 'none'}{hint})")


@agent_hookimpl
def pao_registry_stores(config: PaoConfig) -> list[RegistryStore]:
    return [JsonRegistry(config.home, machine_name(config))]


def structure_record(raw: Any, machine: str, where: str, name: str | None = None) -> AgentRecord:
    """A stored record as an ``AgentRecord``; one written before records had ``machine`` is ``machine``'s.
    ``name``: where the store keeps the record (its ``name`` field may be what is broken)."""
    try:
        record = converter.structure(raw, AgentRecord)
    except (cattrs.BaseValidationError, ValueError, TypeError, AttributeError) as exc:
        if name is None:
            name = raw.get("name") if isinstance(raw, dict) else None
        raise PaoError(f"{where}: agent {name!r} has an unreadable record ({exc})") from None
    return stamped(record, machine)


def stamped(record: AgentRecord, machine: str) -> AgentRecord:
    """``record`` with its machine filled in (an empty one is this machine)."""
    return record if record.machine else attrs.evolve(record, machine=machine)


def readable(raws: Iterable[tuple[str | None, Any]], machine: str, where: str) -> list[AgentRecord]:
    """The stored records that read, oldest first; each one that does not is said on stderr (one
    broken record must not hide every agent from ``list`` and ``monitor``)."""
    records = []
    for name, raw in raws:
        try:
            records.append(structure_record(raw, machine, where, name))
        except PaoError as exc:
            print(f"pao: {exc}; skipped", file=sys.stderr)
    return sorted(records, key=lambda record: (record.created_at, record.name))


@attrs.define
class JsonRegistry(RegistryStore):
    """The agents pao started, in ``agents.json`` under ``home`` (this machine's registry)."""

    home: Path
    machine: str = attrs.field(factory=host_name)
    name: str = "json"
    schemes: tuple[str, ...] = ("",)

    @property
    def path(self) -> Path:
        return Path(self.home) / FILENAME

    def location(self) -> str:
        return str(self.path)

    # -- reads ----------------------------------------------------------------------

    def list(self) -> list[AgentRecord]:
        return readable(((name, _named(name, raw)) for name, raw in self._read().items()), self.machine, str(self.path))

    def find(self, name: str) -> AgentRecord | None:
        raw = self._read().get(name)
        return None if raw is None else self._structure(name, raw)

    def names(self) -> set[str]:
        return set(self._read())

    # -- writes -----------------------------------------------------------------------

    def add(self, record: AgentRecord, candidates: Callable[[int], str] | None = None) -> AgentRecord:
        record = stamped(record, self.machine)
        chosen: list[AgentRecord] = []

        def change(agents: dict[str, Any]) -> None:
            names = [record.name] if candidates is None else (candidates(n) for n in range(1, FREE_NAME_TRIES))
            for name in names:
                if name not in agents:
                    named = attrs.evolve(record, name=name)
                    agents[name] = converter.unstructure(named)
                    chosen.append(named)
                    return
            raise DuplicateAgent.named(record.name, numbered=candidates is not None)

        self._edit(change)
        return chosen[0]

    def change(self, name: str, edit: Callable[[AgentRecord], AgentRecord]) -> AgentRecord:
        changed: list[AgentRecord] = []

        def change(agents: dict[str, Any]) -> None:
            if name not in agents:
                raise UnknownAgent.named(name, agents)
            record = stamped(edit(self._structure(name, agents[name])), self.machine)
            agents[name] = converter.unstructure(record)
            changed.append(record)

        self._edit(change)
        return changed[0]

    def remove(self, name: str) -> AgentRecord:
        removed: list[AgentRecord] = []

        def change(agents: dict[str, Any]) -> None:
            if name not in agents:
                raise UnknownAgent.named(name, agents)
            removed.append(self._structure(name, agents.pop(name)))

        self._edit(change)
        return removed[0]

    # -- machinery -------------------------------------------------------------------

    def _edit(self, change: Callable[[dict[str, Any]], None]) -> None:
        private_dir(self.home)

        def on_document(document: dict[str, Any]) -> None:
            document.setdefault("version", FORMAT_VERSION)
            agents = document.setdefault("agents", {})
            if not isinstance(agents, dict):
                raise UnreadableJSON(f"{self.path}: 'agents' is not an object; pao will not overwrite it")
            change(agents)

        update_json(self.path, on_document, lock_path=self.path.with_name(FILENAME + ".lock"), backup=False,
                    timeout=LOCK_WAIT)

    def _read(self) -> dict[str, Any]:
        try:
            document = json.loads(self.path.read_text(encoding="utf-8") or "{}")
        except FileNotFoundError:
            return {}
        except (ValueError, UnicodeDecodeError) as exc:
            raise UnreadableJSON(f"{self.path} is not valid JSON ({exc}); fix or move it") from None
        agents = document.get("agents", {}) if isinstance(document, dict) else None
        if not isinstance(agents, dict):
            raise UnreadableJSON(f"{self.path}: 'agents' is not an object; fix or move it")
        return agents

    def _structure(self, name: str, raw: Any) -> AgentRecord:
        return structure_record(_named(name, raw), self.machine, str(self.path), name)


def _named(name: str, raw: Any) -> Any:
    """A record of the file, which keys it by name (the name in an error message even when the record has none)."""
    return {**raw, "name": name} if isinstance(raw, dict) else raw  # the key is the name every lookup uses
