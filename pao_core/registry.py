"""The agent registry: ``$PAO_HOME/agents.json``, one record per agent name.

Every change runs under the lock ``agents.json.lock`` (an ``flock`` the kernel releases
when its holder dies, :func:`pao_core.files.state_lock`), re-reads the file, applies the change and replaces the file atomically
(``pao_core.files.update_json``), so two ``pao`` processes acting at once never lose
an agent. Reads need no lock: a reader sees the file before or after a replace.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any, Callable

import attrs
import cattrs

from pao_core.errors import PaoError
from pao_core.files import UnreadableJSON, private_dir, update_json
from pao_core.models import AgentRecord, converter
from pao_core.topic import shown

FILENAME = "agents.json"
FORMAT_VERSION = 1


class UnknownAgent(PaoError):
    """No agent of that name is in the registry."""


class DuplicateAgent(PaoError):
    """An agent of that name is already in the registry."""


@attrs.define
class Registry:
    """The agents pao started, kept under ``home``."""

    home: Path

    @property
    def path(self) -> Path:
        return Path(self.home) / FILENAME

    # -- reads ----------------------------------------------------------------------

    def list(self) -> list[AgentRecord]:
        """Every readable record, oldest first; an unreadable one is reported on stderr and skipped
        (one broken record must not hide every agent from ``list`` and ``monitor``)."""
        records = []
        for name, raw in self._read().items():
            try:
                records.append(self._structure(name, raw))
            except PaoError as exc:
                print(f"pao: {exc}; skipped", file=sys.stderr)
        return sorted(records, key=lambda record: (record.created_at, record.name))

    def find(self, name: str) -> AgentRecord | None:
        raw = self._read().get(name)
        return None if raw is None else self._structure(name, raw)

    def get(self, name: str) -> AgentRecord:
        record = self.find(name)
        if record is None:
            raise UnknownAgent(f"no agent named {shown(name)} (see 'pao list')")
        return record

    def names(self) -> set[str]:
        return set(self._read())

    # -- writes -----------------------------------------------------------------------

    def add(self, record: AgentRecord) -> AgentRecord:
        """Add a record whose name is not taken yet."""

        def change(agents: dict[str, Any]) -> None:
            if record.name in agents:
                raise DuplicateAgent(f"an agent named {record.name!r} already exists (pick another --name)")
            agents[record.name] = converter.unstructure(record)

        self._edit(change)
        return record

    def add_unique(self, record: AgentRecord, candidates: Callable[[str], str]) -> AgentRecord:
        """Add ``record`` under the first free name ``candidates(n)`` gives for n = 1, 2, ..."""
        chosen: list[AgentRecord] = []

        def change(agents: dict[str, Any]) -> None:
            for n in range(1, 10_000):
                name = candidates(n)
                if name not in agents:
                    named = attrs.evolve(record, name=name)
                    agents[name] = converter.unstructure(named)
                    chosen.append(named)
                    return
            raise DuplicateAgent(f"no free agent name left for {record.name!r}")

        self._edit(change)
        return chosen[0]

    def update(self, name: str, *, before: Callable[[AgentRecord], None] | None = None, **changes: Any) -> AgentRecord:
        """Change fields of one record (``updated_at`` is set to now); returns the new record.

        ``before`` is called with the record as it was, under the lock.
        """
        updated: list[AgentRecord] = []

        def change(agents: dict[str, Any]) -> None:
            if name not in agents:
                raise UnknownAgent(f"no agent named {shown(name)} (see 'pao list')")
            previous = self._structure(name, agents[name])
            if before is not None:
                before(previous)
            record = attrs.evolve(previous, **changes, updated_at=_now())
            agents[name] = converter.unstructure(record)
            updated.append(record)

        self._edit(change)
        return updated[0]

    def remove(self, name: str) -> AgentRecord:
        removed: list[AgentRecord] = []

        def change(agents: dict[str, Any]) -> None:
            if name not in agents:
                raise UnknownAgent(f"no agent named {shown(name)} (see 'pao list')")
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

        update_json(self.path, on_document, lock_path=self.path.with_name(FILENAME + ".lock"), backup=False)

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
        try:
            return converter.structure(raw, AgentRecord)
        except (cattrs.BaseValidationError, ValueError, TypeError) as exc:
            raise PaoError(f"{self.path}: agent {name!r} has an unreadable record ({exc})") from None


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)
