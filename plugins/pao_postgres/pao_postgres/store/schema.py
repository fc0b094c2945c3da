"""The knowledge-graph schema (SQLAlchemy Core), with the configured table and column names.

Entities, their ordered observations and the relations between entities: the
model of the MCP reference memory server. pao's own addition, ``<observations>_provenance``,
says which agent and session wrote an observation (``remember``), when (pao's clock), and
when the user kept it (``pao memory review --keep``: then it is the user's tier). An
observation without a row is the user's (import, ``memory add``, the memory file). On PostgreSQL the observation table gets
a stored generated tsvector column with a GIN index and a pg_trgm GIN index for the
ILIKE path; on SQLite an FTS5 table kept in step by triggers.
"""

from __future__ import annotations

import attrs
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from pao_postgres.options import LongtermOptions


@attrs.frozen
class Tables:
    """The three tables and pao's provenance table, plus the names the dialect-specific DDL needs."""

    metadata: sa.MetaData
    entities: sa.Table
    observations: sa.Table
    relations: sa.Table
    provenance: sa.Table
    options: LongtermOptions

    @property
    def fts_table(self) -> str:
        return self.options.fts_table

    def regconfig(self) -> sa.ColumnElement:
        """The text-search configuration as a SQL literal (a validated identifier)."""
        return sa.literal_column(f"'{self.options.language}'::regconfig")

    def search_vector(self, dialect: str) -> sa.ColumnElement:
        """PostgreSQL: the stored tsvector column, or the expression when none is configured."""
        if "search_vector" in self.observations.c:
            return self.observations.c.search_vector
        return sa.func.to_tsvector(self.regconfig(), self.observations.c.content)


def build_tables(options: LongtermOptions, dialect: str) -> Tables:
    """Define the tables under the configured names for ``dialect`` (``postgresql``/``sqlite``)."""
    metadata = sa.MetaData(schema=options.schema or None)
    ent, obs, rel = options.entities, options.observations, options.relations
    entities = sa.Table(
        ent.table,
        metadata,
        sa.Column(ent.id, sa.Integer, primary_key=True, key="id"),
        sa.Column(ent.name, sa.Text, nullable=False, key="name"),
        sa.Column(ent.entity_type, sa.Text, nullable=False, server_default="", key="entity_type"),
    )
    sa.Index(f"{ent.table}_{ent.name}_key", entities.c.name, unique=True)
    sa.Index(f"{ent.table}_{ent.name}_lower_idx", sa.func.lower(entities.c.name))
    columns = [
        sa.Column(obs.id, sa.Integer, primary_key=True, key="id"),
        sa.Column(obs.entity_id, sa.Integer, sa.ForeignKey(entities.c.id, ondelete="CASCADE"), nullable=False, key="entity_id"),
        sa.Column(obs.content, sa.Text, nullable=False, key="content"),
        sa.Column(obs.position, sa.Integer, nullable=False, key="position"),
        sa.Column(obs.created_at, sa.DateTime(timezone=True), nullable=False, key="created_at"),
    ]
    if dialect == "postgresql" and obs.search_vector:
        generated = sa.Computed(f"to_tsvector('{options.language}'::regconfig, {_quoted(obs.content)})", persisted=True)
        columns.append(sa.Column(obs.search_vector, postgresql.TSVECTOR, generated, key="search_vector"))
    observations = sa.Table(obs.table, metadata, *columns)
    observations.append_constraint(
        sa.UniqueConstraint(observations.c.entity_id, observations.c.position, name=f"{obs.table}_position_key")
    )
    relations = sa.Table(
        rel.table,
        metadata,
        sa.Column(rel.id, sa.Integer, primary_key=True, key="id"),
        sa.Column(rel.from_entity_id, sa.Integer, sa.ForeignKey(entities.c.id, ondelete="CASCADE"), nullable=False, key="from_entity_id"),
        sa.Column(rel.to_entity_id, sa.Integer, sa.ForeignKey(entities.c.id, ondelete="CASCADE"), nullable=False, key="to_entity_id"),
        sa.Column(rel.relation_type, sa.Text, nullable=False, key="relation_type"),
    )
    relations.append_constraint(
        sa.UniqueConstraint(relations.c.from_entity_id, relations.c.to_entity_id, relations.c.relation_type, name=f"{rel.table}_edge_key")
    )
    provenance = sa.Table(
        options.provenance_table,
        metadata,
        sa.Column("observation_id", sa.Integer, sa.ForeignKey(observations.c.id, ondelete="CASCADE"), primary_key=True),
        sa.Column("agent", sa.Text, nullable=False),
        sa.Column("session_id", sa.Text),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column(KEPT_AT, sa.DateTime(timezone=True)),
    )
    tables = Tables(metadata, entities, observations, relations, provenance, options)
    if dialect == "postgresql":
        _postgres_indexes(tables)
    return tables


def _quoted(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


KEPT_AT = "kept_at"
"""The provenance column added after the table first shipped: stores made before it get it by migration."""


def is_current(connection: sa.Connection, tables: Tables) -> bool:
    """Whether pao's newest table and column exist (cheap: no DDL, no table lock)."""
    provenance = tables.provenance
    inspector = sa.inspect(connection)
    if not inspector.has_table(provenance.name, schema=provenance.schema):
        return False
    return KEPT_AT in {column["name"] for column in inspector.get_columns(provenance.name, schema=provenance.schema)}


def _migrate(connection: sa.Connection, tables: Tables) -> None:
    """Columns a newer pao added to a table that already exists (create_all skips existing tables)."""
    provenance = tables.provenance
    columns = {column["name"] for column in sa.inspect(connection).get_columns(provenance.name, schema=provenance.schema)}
    if KEPT_AT not in columns:
        kind = provenance.c[KEPT_AT].type.compile(dialect=connection.dialect)
        prefix = _quoted(provenance.schema) + "." if provenance.schema else ""
        connection.exec_driver_sql(f"ALTER TABLE {prefix}{_quoted(provenance.name)} ADD COLUMN {_quoted(KEPT_AT)} {kind}")


def _postgres_indexes(tables: Tables) -> None:
    obs = tables.options.observations
    content = tables.observations.c.content
    if obs.search_vector:
        sa.Index(f"{obs.table}_{obs.search_vector}_gin", tables.observations.c.search_vector, postgresql_using="gin")
    sa.Index(
        f"{obs.table}_{obs.content}_trgm",
        content,
        postgresql_using="gin",
        postgresql_ops={content.name: "gin_trgm_ops", content.key: "gin_trgm_ops"},
    )
    ent = tables.options.entities
    names = sa.Index(
        f"{ent.table}_{ent.name}_tsv_gin",
        sa.func.to_tsvector(tables.regconfig(), tables.entities.c.name),
        postgresql_using="gin",
    )
    # Attached by hand: the regconfig literal reads as a table-less column, so SQLAlchemy
    # would wait for it to join a table and never attach (nor create) the index.
    tables.entities.append_constraint(names)


def create_schema(connection: sa.Connection, tables: Tables) -> None:
    """Create whatever of the schema is missing (idempotent), in the caller's transaction."""
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        if tables.options.schema:
            connection.execute(sa.schema.CreateSchema(tables.options.schema, if_not_exists=True))
    tables.metadata.create_all(connection, checkfirst=True)
    _migrate(connection, tables)
    # create_all skips the indexes of a table that already exists: add missing ones.
    for table in (tables.entities, tables.observations, tables.relations):
        for index in table.indexes:
            connection.execute(sa.schema.CreateIndex(index, if_not_exists=True))
    if connection.dialect.name == "sqlite":
        _sqlite_fts(connection, tables)


def _sqlite_fts(connection: sa.Connection, tables: Tables) -> None:
    """The FTS5 index of content + entity name, and the triggers that keep it current."""
    fts = _quoted(tables.fts_table)
    obs_t = _quoted(tables.observations.name)
    ent_t = _quoted(tables.entities.name)
    o_id, o_ent, o_content = (_quoted(c.name) for c in (tables.observations.c.id, tables.observations.c.entity_id, tables.observations.c.content))
    e_id, e_name = _quoted(tables.entities.c.id.name), _quoted(tables.entities.c.name.name)
    exists = connection.exec_driver_sql(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (tables.fts_table,)
    ).first()
    statements = [
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {fts} USING fts5(content, entity, tokenize = 'porter unicode61')",
        f"CREATE TRIGGER IF NOT EXISTS {_quoted(tables.fts_table + '_ai')} AFTER INSERT ON {obs_t} BEGIN "
        f"INSERT INTO {fts}(rowid, content, entity) SELECT new.{o_id}, new.{o_content}, e.{e_name} "
        f"FROM {ent_t} e WHERE e.{e_id} = new.{o_ent}; END",
        f"CREATE TRIGGER IF NOT EXISTS {_quoted(tables.fts_table + '_ad')} AFTER DELETE ON {obs_t} BEGIN "
        f"DELETE FROM {fts} WHERE rowid = old.{o_id}; END",
        f"CREATE TRIGGER IF NOT EXISTS {_quoted(tables.fts_table + '_au')} AFTER UPDATE ON {obs_t} BEGIN "
        f"DELETE FROM {fts} WHERE rowid = old.{o_id}; "
        f"INSERT INTO {fts}(rowid, content, entity) SELECT new.{o_id}, new.{o_content}, e.{e_name} "
        f"FROM {ent_t} e WHERE e.{e_id} = new.{o_ent}; END",
        f"CREATE TRIGGER IF NOT EXISTS {_quoted(tables.fts_table + '_eu')} AFTER UPDATE OF {e_name} ON {ent_t} BEGIN "
        f"UPDATE {fts} SET entity = new.{e_name} WHERE rowid IN "
        f"(SELECT {o_id} FROM {obs_t} WHERE {o_ent} = new.{e_id}); END",
    ]
    for statement in statements:
        connection.exec_driver_sql(statement)
    if not exists:
        # An existing database gets its index filled once, at init.
        connection.exec_driver_sql(
            f"INSERT INTO {fts}(rowid, content, entity) SELECT o.{o_id}, o.{o_content}, e.{e_name} "
            f"FROM {obs_t} o JOIN {ent_t} e ON e.{e_id} = o.{o_ent}"
        )
