"""Reading an MCP memory-server JSONL file, every line checked before anything is written."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable

import attrs

from pao_core.errors import PaoError
from pao_core.jsonbound import TooDeep, loads
from pao_postgres.items import cut_observation, observation_too_long


class ImportFileError(PaoError):
    """The file cannot be imported; the message names the line."""


@attrs.frozen
class EntityLine:
    name: str
    entity_type: str
    observations: tuple[str, ...]


@attrs.frozen
class RelationLine:
    source: str
    target: str
    relation_type: str


@attrs.frozen
class MemoryFile:
    """A parsed file: entities merged by name (first type wins), relations in order."""

    entities: tuple[EntityLine, ...]
    relations: tuple[RelationLine, ...]

    @property
    def observation_count(self) -> int:
        return sum(len(entity.observations) for entity in self.entities)


def _text(record: dict, key: str, where: str, *, allow_empty: bool = False) -> str:
    value = record.get(key)
    if not isinstance(value, str) or (not allow_empty and not value.strip()):
        raise ImportFileError(f"{where}: {key!r} must be a non-empty string")
    if "\x00" in value:
        raise ImportFileError(f"{where}: {key!r} contains a NUL character")
    return value


def parse_line(line: str, where: str, *, cut: bool = False) -> EntityLine | RelationLine | None:
    """One line of the file; ``None`` for a blank line. An observation over the size limit is
    refused, or with ``cut`` (the memory file, which pao follows and cannot fix) cut to it."""
    if not line.strip():
        return None
    try:
        record = loads(line)
    except TooDeep as exc:
        raise ImportFileError(f"{where}: not valid JSON: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ImportFileError(f"{where}: not valid JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(record, dict):
        raise ImportFileError(f"{where}: expected a JSON object, got {type(record).__name__}")
    kind = record.get("type")
    if kind == "entity":
        observations = record.get("observations", [])
        if not isinstance(observations, list) or not all(isinstance(item, str) for item in observations):
            raise ImportFileError(f"{where}: 'observations' must be a list of strings")
        if any("\x00" in item for item in observations):
            raise ImportFileError(f"{where}: an observation contains a NUL character")
        if cut:
            observations = [cut_observation(item) for item in observations]
        elif any(observation_too_long(item) for item in observations):
            raise ImportFileError(f"{where}: {next(filter(None, map(observation_too_long, observations)))}")
        entity_type = _text(record, "entityType", where, allow_empty=True) if "entityType" in record else ""
        return EntityLine(_text(record, "name", where), entity_type, tuple(o for o in observations if o.strip()))
    if kind == "relation":
        return RelationLine(_text(record, "from", where), _text(record, "to", where), _text(record, "relationType", where))
    raise ImportFileError(f"{where}: 'type' must be \"entity\" or \"relation\", got {kind!r}")


def read_memory_file(path: Path) -> MemoryFile:
    """Parse and validate the whole file (a regular file: a FIFO or device is refused, never
    waited on); raise on the first bad line, naming it."""
    from pao_core.files import open_no_follow  # only when a file is imported

    try:
        with os.fdopen(open_no_follow(path, os.O_RDONLY, follow=True, owned=False), "rb") as handle:
            data = handle.read()  # a link to a regular file is followed: the user named it
    except OSError as exc:
        raise ImportFileError(f"{path}: cannot read: {exc.strerror}") from None
    return parse_memory(data, str(path))


def parse_memory(data: bytes, where: str, *, cut: bool = False, first_line: int = 1) -> MemoryFile:
    """The graph of a file's bytes: entities merged by name (their observations in order,
    each text once), relations in order; :class:`ImportFileError` names the first bad line
    (numbered from ``first_line``: a part of a file read from its middle)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ImportFileError(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    entities: list[EntityLine] = []
    relations: list[RelationLine] = []
    for number, line in enumerate(text.splitlines(), start=first_line):
        parsed = parse_line(line, f"{where}:{number}", cut=cut)
        if isinstance(parsed, EntityLine):
            entities.append(parsed)
        elif isinstance(parsed, RelationLine):
            relations.append(parsed)
    return merge([MemoryFile(tuple(entities), tuple(relations))])


def merge(graphs: Iterable[MemoryFile]) -> MemoryFile:
    """One graph of several (or of one with repeated names): entities merged by name (the first
    type wins, observations in order, each text once), relations in order, each once."""
    types: dict[str, str] = {}
    observations: dict[str, dict[str, None]] = {}
    relations: dict[RelationLine, None] = {}
    for graph in graphs:
        for entity in graph.entities:
            types.setdefault(entity.name, entity.entity_type)
            observations.setdefault(entity.name, {}).update(dict.fromkeys(entity.observations))
        relations.update(dict.fromkeys(graph.relations))
    return MemoryFile(tuple(EntityLine(name, kind, tuple(observations[name])) for name, kind in types.items()),
                      tuple(relations))


def memory_lines(memory: MemoryFile) -> str:
    """``memory`` in the MCP memory server's JSONL format (one entity or relation a line)."""
    lines = [
        json.dumps({"type": "entity", "name": e.name, "entityType": e.entity_type, "observations": list(e.observations)},
                   ensure_ascii=False)
        for e in memory.entities
    ]
    lines += [
        json.dumps({"type": "relation", "from": r.source, "to": r.target, "relationType": r.relation_type},
                   ensure_ascii=False)
        for r in memory.relations
    ]
    return "".join(line + "\n" for line in lines)
