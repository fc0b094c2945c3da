"""The longterm store: schema, writes (import, add, remember, forget), statistics and the graph, on
either dialect, through SQLAlchemy (:mod:`pao_postgres.store.engine`); its searches are the searcher's
(:mod:`pao_postgres.searcher.retrieval`, no SQLAlchemy)."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any, Sequence

import attrs
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from pao_core.contracts import MAX_OBSERVATION_CHARS
from pao_core.models import MemoryItem, Provenance, Remembered
from pao_postgres.store import engine as engines
from pao_postgres.store.engine import LongtermError, transaction
from pao_postgres.items import as_utc, make_item
from pao_postgres.mcpfile import EntityLine, MemoryFile, RelationLine
from pao_postgres.options import LongtermOptions
from pao_postgres.searcher.provenance import same_observation, with_provenance
from pao_postgres.searcher.retrieval import search
from pao_postgres.store.schema import KEPT_AT, Tables, build_tables, create_schema, is_current


@attrs.frozen
class ImportCounts:
    entities: int = 0
    observations: int = 0
    relations: int = 0


@attrs.define
class LongtermStore:
    """One configured store: PostgreSQL when a URL is set, else the embedded SQLite file."""

    options: LongtermOptions
    home: Path
    _tables: Tables | None = attrs.field(default=None, init=False, repr=False)
    _url: sa.URL | None = attrs.field(default=None, init=False, repr=False)
    _schema_ready: bool = attrs.field(default=False, init=False, repr=False)

    @property
    def is_sqlite(self) -> bool:
        return not self.options.url.strip()

    @property
    def sqlite_file(self) -> Path:
        return self.options.sqlite_file(self.home)

    def url(self) -> sa.URL:
        if self._url is None:
            self._url = engines.sqlite_url(self.sqlite_file) if self.is_sqlite else engines.sqlalchemy_url(self.options.url)
        return self._url

    def describe(self) -> str:
        """Where the store is, password masked."""
        return f"sqlite:{self.sqlite_file}" if self.is_sqlite else engines.describe_url(self.url())

    @property
    def tables(self) -> Tables:
        if self._tables is None:
            self._tables = build_tables(self.options, "sqlite" if self.is_sqlite else "postgresql")
        return self._tables

    def engine(self) -> sa.Engine:
        return engines.engine_for(self.url(), self.options.pool_size)

    def exists(self) -> bool:
        """False only for an embedded store that was never written."""
        return not self.is_sqlite or self.sqlite_file.exists()

    def _write(self, deadline: float | None = None) -> Any:
        if self.is_sqlite:  # the user's memory: the owner's alone (SQLite's sidecars copy the mode)
            from pao_core.files import private_file

            private_file(self.sqlite_file, "-wal", "-shm", "-journal")
        return transaction(self.engine(), deadline or time.monotonic() + engines.WRITE_DEADLINE, write=True)

    # -- writes --------------------------------------------------------------------

    def init(self) -> None:
        """Create the schema and indexes (idempotent)."""
        with self._write() as connection:
            create_schema(connection, self.tables)

    def import_memory(self, memory: MemoryFile, now: dt.datetime | None = None) -> ImportCounts:
        """Add what the file has and the store lacks, in one transaction."""
        with self._write() as connection:
            create_schema(connection, self.tables)
            return self.import_into(connection, memory, now)

    def import_into(self, connection: sa.Connection, memory: MemoryFile, now: dt.datetime | None = None) -> ImportCounts:
        """:meth:`import_memory` in the caller's write transaction."""
        stamp = now or dt.datetime.now(dt.timezone.utc)
        names = [entity.name for entity in memory.entities]
        names += [name for rel in memory.relations for name in (rel.source, rel.target)]
        ids, new_entities = self._ensure_entities(connection, names, {e.name: e.entity_type for e in memory.entities})
        known = self._known_observations(connection, list(ids.values()))
        rows = []
        for entity in memory.entities:
            entity_id = ids[entity.name]
            contents, next_position = known.get(entity_id, (set(), 0))
            for content in entity.observations:
                if content in contents:
                    continue
                contents.add(content)
                rows.append({"entity_id": entity_id, "content": content, "position": next_position, "created_at": stamp})
                next_position += 1
            known[entity_id] = (contents, next_position)
        if rows:
            connection.execute(sa.insert(self.tables.observations), rows)
        added_relations = self._add_relations(connection, memory, ids)
        return ImportCounts(new_entities, len(rows), added_relations)

    def _ensure_entities(
        self, connection: sa.Connection, names: Sequence[str], types: dict[str, str]
    ) -> tuple[dict[str, int], int]:
        entities = self.tables.entities
        wanted = list(dict.fromkeys(names))
        ids: dict[str, int] = {}
        for chunk in chunks(wanted):
            query = sa.select(entities.c.name, entities.c.id).where(entities.c.name.in_(chunk))
            ids.update({name: entity_id for name, entity_id in connection.execute(query)})
        missing = [name for name in wanted if name not in ids]
        if missing:
            # A concurrent writer may add the same name first: keep its row, not an error.
            dialect = postgresql if connection.dialect.name == "postgresql" else sqlite
            connection.execute(
                dialect.insert(entities).on_conflict_do_nothing(),
                [{"name": name, "entity_type": types.get(name, "")} for name in missing],
            )
            for chunk in chunks(missing):
                query = sa.select(entities.c.name, entities.c.id).where(entities.c.name.in_(chunk))
                ids.update({name: entity_id for name, entity_id in connection.execute(query)})
        return ids, len(missing)

    def _known_observations(self, connection: sa.Connection, entity_ids: list[int]) -> dict[int, tuple[set[str], int]]:
        obs = self.tables.observations
        known: dict[int, tuple[set[str], int]] = {}
        for chunk in chunks(entity_ids):
            query = sa.select(obs.c.entity_id, obs.c.content, obs.c.position).where(obs.c.entity_id.in_(chunk))
            for entity_id, content, position in connection.execute(query):
                contents, next_position = known.get(entity_id, (set(), 0))
                contents.add(content)
                known[entity_id] = (contents, max(next_position, position + 1))
        return known

    def _add_relations(self, connection: sa.Connection, memory: MemoryFile, ids: dict[str, int]) -> int:
        rel = self.tables.relations
        wanted = {(ids[r.source], ids[r.target], r.relation_type) for r in memory.relations}
        if not wanted:
            return 0
        existing = set()
        involved = sorted({source for source, _, _ in wanted})
        for chunk in chunks(involved):
            query = sa.select(rel.c.from_entity_id, rel.c.to_entity_id, rel.c.relation_type).where(
                rel.c.from_entity_id.in_(chunk)
            )
            existing.update(tuple(row) for row in connection.execute(query))
        rows = [
            {"from_entity_id": s, "to_entity_id": t, "relation_type": kind}
            for s, t, kind in sorted(wanted - existing)
        ]
        if rows:
            connection.execute(sa.insert(rel), rows)
        return len(rows)

    def add(self, entity: str, text: str, entity_type: str = "") -> MemoryItem:
        """Append one observation to ``entity`` (created when new); return it as an item."""
        stamp = dt.datetime.now(dt.timezone.utc)
        with self._write() as connection:
            entity_id, kind = self._entity_for_append(connection, entity, entity_type)
            _, position = self._append(connection, entity_id, text, stamp)
        return make_item(entity, kind, text, position, stamp, 0.0)

    def remember(self, entity: str, text: str, provenance: Provenance, deadline: float | None = None) -> Remembered:
        """Append ``text`` to ``entity`` with its provenance, unless the entity already has
        that observation (same words, case and spacing aside): then return that one.

        Stamped by this store's clock, never the caller's; refused past ``agent_facts_per_session``
        new facts of the session, or past ``MAX_OBSERVATION_CHARS``."""
        if len(text) > MAX_OBSERVATION_CHARS:
            raise LongtermError(f"the observation has {len(text):,} characters; at most {MAX_OBSERVATION_CHARS:,} are stored")
        obs, prov = self.tables.observations, self.tables.provenance
        provenance = attrs.evolve(provenance, recorded_at=dt.datetime.now(dt.timezone.utc))
        with self._write(deadline) as connection:
            entity_id, kind = self._entity_for_append(connection, entity, "")
            wanted = same_observation(text)
            known = connection.execute(
                sa.select(obs.c.id, obs.c.content, obs.c.position, obs.c.created_at).where(obs.c.entity_id == entity_id)
            )
            for row in known:
                if same_observation(row.content) == wanted:
                    earlier = connection.execute(sa.select(prov).where(prov.c.observation_id == row.id)).first()
                    item = make_item(entity, kind, row.content, row.position, row.created_at, 0.0)
                    return Remembered(with_provenance(item, earlier), created=False)
            self._check_session_cap(connection, provenance)
            observation_id, position = self._append(connection, entity_id, text, provenance.recorded_at)
            connection.execute(
                sa.insert(prov),
                {
                    "observation_id": observation_id,
                    "agent": provenance.agent,
                    "session_id": provenance.session_id,
                    "recorded_at": provenance.recorded_at,
                },
            )
        item = make_item(entity, kind, text, position, provenance.recorded_at, 0.0)
        return Remembered(with_provenance(item, provenance), created=True)

    def _check_session_cap(self, connection: sa.Connection, provenance: Provenance) -> None:
        """Refuse one more fact from a session that wrote its share (serialised per session on a server)."""
        prov, cap = self.tables.provenance, self.options.agent_facts_per_session
        if not self.is_sqlite:  # SQLite's write lock already serialises writers
            key = repr(("pao-remember", provenance.agent, provenance.session_id))
            connection.execute(sa.select(sa.func.pg_advisory_xact_lock(sa.func.hashtext(key))))
        session = prov.c.session_id == provenance.session_id if provenance.session_id else prov.c.session_id.is_(None)
        written = connection.execute(
            sa.select(sa.func.count()).where(prov.c.agent == provenance.agent, session, prov.c[KEPT_AT].is_(None))
        ).scalar_one()
        if written >= cap:
            raise LongtermError(
                f"this session already stored {written} facts, the most one session may "
                f"([backends.longterm] agent_facts_per_session = {cap}); the user can keep or forget them "
                "with `pao memory review`. Tell the user what else is worth keeping instead."
            )

    def _entity_for_append(self, connection: sa.Connection, entity: str, entity_type: str) -> tuple[int, str]:
        """The entity's id (created when new) and type, locked against concurrent appends."""
        entities = self.tables.entities
        if not self._schema_ready:
            # Once per process, and DDL only when pao's newest table is missing: DDL on a store
            # in use would take table locks against other agents' writes.
            if not is_current(connection, self.tables):
                create_schema(connection, self.tables)
            self._schema_ready = True
        ids, _ = self._ensure_entities(connection, [entity], {entity: entity_type})
        lock = sa.select(entities.c.id).where(entities.c.id == ids[entity])
        if not self.is_sqlite:
            connection.execute(lock.with_for_update())  # serialise concurrent adds to one entity
        kind = connection.execute(sa.select(entities.c.entity_type).where(entities.c.id == ids[entity])).scalar()
        return ids[entity], kind or ""

    def _append(self, connection: sa.Connection, entity_id: int, text: str, stamp: dt.datetime) -> tuple[int, int]:
        """Insert ``text`` after the entity's last observation; its id and position."""
        obs = self.tables.observations
        last = connection.execute(sa.select(sa.func.max(obs.c.position)).where(obs.c.entity_id == entity_id)).scalar()
        position = 0 if last is None else last + 1
        inserted = connection.execute(
            sa.insert(obs).returning(obs.c.id),
            {"entity_id": entity_id, "content": text, "position": position, "created_at": stamp},
        )
        return inserted.scalar_one(), position

    def write(self, deadline: float | None = None) -> Any:
        """A write transaction on the store, bounded by ``deadline``."""
        return self._write(deadline)

    def forget(self, entity: str, observation: str | None = None) -> ImportCounts:
        """Remove ``entity`` (its observations and relations with it), or only its
        ``observation``; what was removed (all zero: nothing matched)."""
        t = self.tables
        with self._write() as connection:
            create_schema(connection, t)
            entity_id = connection.execute(sa.select(t.entities.c.id).where(t.entities.c.name == entity)).scalar()
            if entity_id is None:
                return ImportCounts()
            obs = t.observations.c
            if observation is not None:
                gone = connection.execute(
                    sa.delete(t.observations).where(obs.entity_id == entity_id, obs.content == observation)
                )
                return ImportCounts(observations=gone.rowcount)
            rel = t.relations.c
            counted = connection.execute(
                sa.select(
                    sa.select(sa.func.count()).where(obs.entity_id == entity_id).scalar_subquery(),
                    sa.select(sa.func.count()).where(
                        sa.or_(rel.from_entity_id == entity_id, rel.to_entity_id == entity_id)
                    ).scalar_subquery(),
                )
            ).one()
            # Explicit deletes: a mapped database's foreign keys may not cascade.
            connection.execute(sa.delete(t.observations).where(obs.entity_id == entity_id))
            connection.execute(
                sa.delete(t.relations).where(sa.or_(rel.from_entity_id == entity_id, rel.to_entity_id == entity_id))
            )
            connection.execute(sa.delete(t.entities).where(t.entities.c.id == entity_id))
        return ImportCounts(1, counted[0], counted[1])

    def graph(self, deadline: float) -> MemoryFile:
        """The whole store as an MCP memory graph (observations in position order)."""
        if not self.exists():
            return MemoryFile((), ())
        t = self.tables
        source, target = t.entities.alias("source"), t.entities.alias("target")
        with transaction(self.engine(), deadline) as connection:
            entities = {
                name: EntityLine(name, kind or "", ())
                for name, kind in connection.execute(sa.select(t.entities.c.name, t.entities.c.entity_type).order_by(t.entities.c.id))
            }
            observations: dict[str, list[str]] = {}
            joined = t.observations.join(t.entities, t.entities.c.id == t.observations.c.entity_id)
            query = sa.select(t.entities.c.name, t.observations.c.content).select_from(joined)
            for name, content in connection.execute(query.order_by(t.entities.c.id, t.observations.c.position)):
                observations.setdefault(name, []).append(content)
            edges = connection.execute(
                sa.select(source.c.name, target.c.name, t.relations.c.relation_type)
                .select_from(t.relations.join(source, source.c.id == t.relations.c.from_entity_id)
                             .join(target, target.c.id == t.relations.c.to_entity_id))
                .order_by(t.relations.c.id)
            )
            relations = tuple(RelationLine(a, b, kind) for a, b, kind in edges)
        return MemoryFile(
            tuple(attrs.evolve(e, observations=tuple(observations.get(name, ()))) for name, e in entities.items()),
            relations,
        )

    # -- reads ---------------------------------------------------------------------

    def stats(self, deadline: float) -> dict[str, Any]:
        """Counts of entities, observations and relations, and the newest observation's date."""
        base: dict[str, Any] = {"store": self.describe(), "dialect": "sqlite" if self.is_sqlite else "postgresql"}
        base["mode"] = self.options.mode
        if not self.exists():
            return base | {"exists": False, "entities": 0, "observations": 0, "relations": 0, "newest": None}
        t = self.tables
        with transaction(self.engine(), deadline) as connection:
            counts = connection.execute(
                sa.select(
                    sa.select(sa.func.count()).select_from(t.entities).scalar_subquery(),
                    sa.select(sa.func.count()).select_from(t.observations).scalar_subquery(),
                    sa.select(sa.func.count()).select_from(t.relations).scalar_subquery(),
                    sa.select(sa.func.max(t.observations.c.created_at)).scalar_subquery(),
                )
            ).one()
        newest = as_utc(counts[3])
        return base | {
            "exists": True,
            "entities": counts[0],
            "observations": counts[1],
            "relations": counts[2],
            "newest": newest.isoformat() if newest else None,
        }

    def search(self, query: str, limit: int, deadline: float, mode: str | None = None) -> list[MemoryItem]:
        return search(self.options, self.home, query, limit, deadline, mode)

    def close(self) -> None:
        """The close step: this store's pooled connections closed (a later use opens new ones)."""
        if self._url is not None:
            engines.dispose(self._url, self.options.pool_size)


def chunks(values: Sequence[Any], size: int = 500) -> list[Sequence[Any]]:
    return [values[start : start + size] for start in range(0, len(values), size)]


__all__ = ["ImportCounts", "LongtermError", "LongtermStore", "as_utc", "make_item"]
