"""The ``[backends.longterm]`` table: where the store is and how its tables are named.

Only ``attrs`` here: the hooks module imports this, and it must stay cheap.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal, Mapping

import attrs

Mode = Literal["original", "ranked"]
MODES: tuple[str, ...] = ("original", "ranked")
DEFAULT_MODE: Mode = "ranked"


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


def _identifier(instance: object, attribute: attrs.Attribute, value: str) -> None:
    if not _IDENTIFIER.match(value):
        raise ValueError(f"{attribute.name}: {value!r} is not a plain SQL identifier (letters, digits, _)")


def _optional_identifier(instance: object, attribute: attrs.Attribute, value: str | None) -> None:
    if value:
        _identifier(instance, attribute, value)


@attrs.frozen
class EntityColumns:
    """``[backends.longterm.entities]``: the entity table and its columns."""

    table: str = attrs.field(default="entities", validator=_identifier)
    id: str = attrs.field(default="id", validator=_identifier)
    name: str = attrs.field(default="name", validator=_identifier)
    entity_type: str = attrs.field(default="entity_type", validator=_identifier)


@attrs.frozen
class ObservationColumns:
    """``[backends.longterm.observations]``: the observation table and its columns.

    ``search_vector`` names a stored tsvector column (PostgreSQL); empty means
    compute ``to_tsvector(content)`` on the fly, for databases that lack one.
    """

    table: str = attrs.field(default="observations", validator=_identifier)
    id: str = attrs.field(default="id", validator=_identifier)
    entity_id: str = attrs.field(default="entity_id", validator=_identifier)
    content: str = attrs.field(default="content", validator=_identifier)
    position: str = attrs.field(default="position", validator=_identifier)
    created_at: str = attrs.field(default="created_at", validator=_identifier)
    search_vector: str = attrs.field(default="search_vector", validator=_optional_identifier)


@attrs.frozen
class RelationColumns:
    """``[backends.longterm.relations]``: the relation table and its columns."""

    table: str = attrs.field(default="relations", validator=_identifier)
    id: str = attrs.field(default="id", validator=_identifier)
    from_entity_id: str = attrs.field(default="from_entity_id", validator=_identifier)
    to_entity_id: str = attrs.field(default="to_entity_id", validator=_identifier)
    relation_type: str = attrs.field(default="relation_type", validator=_identifier)


def _mode(instance: object, attribute: attrs.Attribute, value: str) -> None:
    if value not in MODES:
        raise ValueError(f"mode: {value!r} is not one of {', '.join(MODES)}")


@attrs.frozen
class LongtermOptions:
    """Options of the longterm backend (``[backends.NAME]``, default name ``longterm``).

    ``url``: a PostgreSQL URL (libpq ``postgresql://user@host/db`` or SQLAlchemy's
    ``postgresql+psycopg://``); empty means the embedded SQLite store at ``sqlite_path``
    (default ``<PAO_HOME>/longterm.sqlite3``). ``memory_file``: the MCP memory server's
    JSONL file to follow before every search (``$PAO_MEMORY_FILE`` overrides it; when
    neither is set, the server's own absolute ``$MEMORY_FILE_PATH``). ``semantic``: embed
    observations when they are written and fuse vector search with the lexical one (needs
    the model wheel); false keeps both lexical only. ``warm_searcher``: a server store's
    searches go through a per-user background process that keeps the connection and the
    model warm, started on demand and gone after ``warm_searcher_idle_s`` without a search
    (:mod:`pao_postgres.searcher.warm`; ``$PAO_WARM_SEARCHER=0`` turns it off too).
    ``background_embedding``: observations a search synced from the memory file are
    embedded by ``pao memory sync`` in a background process once the search is over
    (:mod:`pao_embeddings.later`; ``$PAO_BACKGROUND_EMBEDDING=0`` turns it off too).
    ``agent_facts_per_session``: ``remember`` refuses an agent's session more new facts than
    this (those the user kept with ``pao memory review --keep`` do not count).
    """

    enabled: bool = True
    url: str = ""
    mode: str = attrs.field(default=DEFAULT_MODE, validator=_mode)
    sqlite_path: Path | None = None
    memory_file: Path | None = None
    schema: str = attrs.field(default="", validator=_optional_identifier)
    language: str = attrs.field(default="english", validator=_identifier)
    pool_size: int = attrs.field(default=2, validator=attrs.validators.ge(1))
    semantic: bool = True
    warm_searcher: bool = True
    warm_searcher_idle_s: int = attrs.field(default=900, validator=attrs.validators.ge(1))
    background_embedding: bool = True
    agent_facts_per_session: int = attrs.field(default=20, validator=attrs.validators.ge(0))
    entities: EntityColumns = EntityColumns()
    observations: ObservationColumns = ObservationColumns()
    relations: RelationColumns = RelationColumns()

    def sqlite_file(self, home: Path) -> Path:
        return self.sqlite_path or home / "longterm.sqlite3"

    @property
    def fts_table(self) -> str:
        """SQLite: the FTS5 table indexing observation content and entity name."""
        return f"{self.observations.table}_fts"

    @property
    def provenance_table(self) -> str:
        """pao's own table: which agent and session ``remember``-ed an observation."""
        return f"{self.observations.table}_provenance"


MEMORY_FILE_ENV = "PAO_MEMORY_FILE"
SERVER_MEMORY_FILE_ENV = "MEMORY_FILE_PATH"


def memory_file(options: LongtermOptions, environ: Mapping[str, str] | None = None) -> Path | None:
    """The MCP memory file to follow: ``$PAO_MEMORY_FILE``, else ``memory_file`` in the
    config, else the server's own ``$MEMORY_FILE_PATH`` when it is absolute (a relative
    one is relative to the server's install folder, which pao cannot know)."""
    env = os.environ if environ is None else environ
    if env.get(MEMORY_FILE_ENV):
        return Path(env[MEMORY_FILE_ENV]).expanduser()
    if options.memory_file:
        return Path(options.memory_file).expanduser()
    server = Path(env.get(SERVER_MEMORY_FILE_ENV, "")).expanduser()
    return server if env.get(SERVER_MEMORY_FILE_ENV) and server.is_absolute() else None


@attrs.frozen
class WarmBriefOptions:
    """``[warm_brief]``: ``pao brief`` answered by a per-user background process that has pao loaded
    (:mod:`pao_postgres.warm_brief`). ``enabled = false`` (or ``$PAO_WARM_BRIEF=0``) briefs in each
    process; the server exits after ``idle_s`` without a request."""

    enabled: bool = True
    idle_s: int = attrs.field(default=900, validator=attrs.validators.ge(10))
