"""A tiny pao memory backend: the bullets of one markdown file, matched by shared words."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import attrs

from pao_core import MemoryBackend, MemoryItem, hookimpl

WORD = re.compile(r"\w{3,}")


@attrs.frozen
class NotesOptions:
    path: str = "~/notes.md"
    enabled: bool = True


@attrs.frozen
class NotesBackend(MemoryBackend):
    name: str
    path: Path

    def _notes(self) -> list[str]:
        lines = self.path.read_text(encoding="utf-8").splitlines()
        return [line[2:].strip() for line in lines if line.startswith("- ")]

    def search(self, query: str, limit: int, deadline: float) -> list[MemoryItem]:
        wanted = {word.lower() for word in WORD.findall(query)}
        scored = []
        for position, note in enumerate(self._notes()):
            if time.monotonic() > deadline:
                break
            shared = wanted & {word.lower() for word in WORD.findall(note)}
            if shared:
                scored.append((len(shared), position, note))
        scored.sort(key=lambda row: (-row[0], row[1]))
        return [
            MemoryItem(backend=self.name, id=f"note:{position}", title=self.path.name, text=note, score=float(score))
            for score, position, note in scored[:limit]
        ]

    def health(self, deadline: float) -> str:
        return f"{self.path}: {len(self._notes())} notes"


@hookimpl
def pao_memory_backends(config):
    options = config.options("backends", "notes", NotesOptions)
    path = Path(os.path.expanduser(options.path))
    if options.enabled and path.exists():
        return [NotesBackend("notes", path)]
    return []
