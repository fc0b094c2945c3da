"""The agent registry in PostgreSQL (``[registry] url = "postgresql://..."``), shared by every
machine that names the same database.

One row per agent in ``pao_agents`` (created on first use): the name is the primary key,
so ``INSERT ... ON CONFLICT DO NOTHING`` lets exactly one of two machines register a name;
a change reads the row ``FOR UPDATE`` and writes it back in one transaction, so no change
is lost. psycopg alone, without SQLAlchemy: one connection per process, opened on the
first read (``pao list`` pays one connection, not an engine). A server that cannot be
reached is one line naming the URL with its password masked (``RegistryUnavailable``).
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterator

import attrs
from pao_agents.spec import RegistryStore
from pao_agents.spec import DuplicateAgent, RegistryUnavailable, UnknownAgent
from pao_core.models import converter
from pao_agents.spec import AgentRecord
from pao_agents.spec import FREE_NAME_TRIES, readable, stamped, structure_record

if TYPE_CHECKING:
    import psycopg

TABLE = "pao_agents"
SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")
CONNECT_TIMEOUT = 5
"""Seconds to reach the server (libpq waits at least 2)."""
STATEMENT_TIMEOUT = "10s"
"""A statement (or a wait for another machine's row lock) that takes longer fails with one line."""
CREATE_LOCK = 0x7061_6F5F_7265_67  # "pao_reg": serialises the first CREATE TABLE of racing machines

CREATE = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    name text PRIMARY KEY,
    machine text NOT NULL,
    record jsonb NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
)"""
INSERT = (f"INSERT INTO {TABLE} (name, machine, record, created_at, updated_at)"
          " VALUES (%(name)s, %(machine)s, %(record)s, %(created_at)s, %(updated_at)s)"
          " ON CONFLICT (name) DO NOTHING RETURNING name")


def _masked(text: str) -> str:
    from pao_core.sanitize import mask_url  # its patterns: only what shows the URL needs them (not `pao list`)

    return mask_url(text)


@attrs.define
class PostgresRegistry(RegistryStore):
    """The registry in the PostgreSQL database at ``url``; ``machine`` is this machine's name."""

    url: str
    machine: str
    name: str = "postgresql"
    schemes: tuple[str, ...] = SCHEMES

    def location(self) -> str:
        return _masked(self.url)

    @property
    def where(self) -> str:
        return f"registry {self.location()}"

    # -- reads ----------------------------------------------------------------------

    def list(self) -> list[AgentRecord]:
        with self._session() as connection:
            rows = connection.execute(f"SELECT name, record FROM {TABLE} ORDER BY created_at, name").fetchall()
        return readable(((row[0], row[1]) for row in rows), self.machine, self.where)

    def find(self, name: str) -> AgentRecord | None:
        with self._session() as connection:
            row = connection.execute(f"SELECT record FROM {TABLE} WHERE name = %s", (name,)).fetchone()
        return None if row is None else self._structure(row[0])

    def names(self) -> set[str]:
        with self._session() as connection:
            return self._taken(connection)

    # -- writes -----------------------------------------------------------------------

    def add(self, record: AgentRecord, candidates: Callable[[int], str] | None = None) -> AgentRecord:
        record = stamped(record, self.machine)
        with self._session() as connection:
            if candidates is None:
                if self._insert(connection, record):
                    return record
                raise DuplicateAgent.named(record.name)
            taken = self._taken(connection)
            for n in range(1, FREE_NAME_TRIES):
                name = candidates(n)
                if name not in taken:  # another machine may take it first: then the next one
                    named = attrs.evolve(record, name=name)
                    if self._insert(connection, named):
                        return named
        raise DuplicateAgent.named(record.name, numbered=True)

    def change(self, name: str, edit: Callable[[AgentRecord], AgentRecord]) -> AgentRecord:
        from psycopg.types.json import Jsonb  # the driver: loaded with the connection

        with self._session() as connection, connection.transaction():
            row = connection.execute(f"SELECT record FROM {TABLE} WHERE name = %s FOR UPDATE", (name,)).fetchone()
            if row is None:
                raise UnknownAgent.named(name, self._taken(connection))
            record = stamped(edit(self._structure(row[0])), self.machine)
            connection.execute(
                f"UPDATE {TABLE} SET machine = %s, record = %s, updated_at = %s WHERE name = %s",
                (record.machine, Jsonb(converter.unstructure(record)), record.updated_at, name),
            )
        return record

    def remove(self, name: str) -> AgentRecord:
        with self._session() as connection:
            row = connection.execute(f"DELETE FROM {TABLE} WHERE name = %s RETURNING record", (name,)).fetchone()
            if row is None:
                raise UnknownAgent.named(name, self._taken(connection))
        return self._structure(row[0])

    def close(self) -> None:
        """The close step: this process's connection to ``url`` closed (the next call opens one)."""
        link = _link(self.url)
        with link.lock:
            connection, link.connection = link.connection, None
        if connection is not None:
            with contextlib.suppress(Exception):
                connection.close()

    # -- machinery -------------------------------------------------------------------

    @staticmethod
    def _taken(connection: psycopg.Connection) -> set[str]:
        return {row[0] for row in connection.execute(f"SELECT name FROM {TABLE}")}

    def _insert(self, connection: psycopg.Connection, record: AgentRecord) -> bool:
        from psycopg.types.json import Jsonb  # the driver: loaded with the connection

        row = connection.execute(INSERT, {
            "name": record.name, "machine": record.machine, "record": Jsonb(converter.unstructure(record)),
            "created_at": record.created_at, "updated_at": record.updated_at,
        }).fetchone()
        return row is not None

    @contextlib.contextmanager
    def _session(self) -> Iterator[psycopg.Connection]:
        """This process's connection to ``url`` (opened, and the table created, on first use; shared by
        every store of that URL, so a long-lived ``pao mcp`` keeps one), one caller at a time.

        Every psycopg error leaves as one line naming the masked URL; a lost connection is
        dropped, and the next call connects again.
        """
        import psycopg  # the driver: only a command that reads the registry loads it

        link = _link(self.url)
        with link.lock:
            try:
                if link.connection is None or link.connection.closed:
                    link.connection = self._connect()
                yield link.connection
            except psycopg.Error as exc:
                if isinstance(exc, psycopg.OperationalError) and link.connection is not None:
                    link.connection.close()
                raise RegistryUnavailable(self._describe(exc)) from None

    def _connect(self) -> psycopg.Connection:
        import psycopg  # the driver: only a command that reads the registry loads it

        url = "postgresql" + self.url[self.url.index("://"):]  # libpq knows no "+psycopg"
        connection = psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT,
                                     application_name="pao-registry")
        try:
            exists = connection.execute(
                "SELECT to_regclass(%s) IS NOT NULL, set_config('statement_timeout', %s, false)",
                (TABLE, STATEMENT_TIMEOUT),
            ).fetchone()
            if not (exists and exists[0]):
                with connection.transaction():
                    connection.execute("SELECT pg_advisory_xact_lock(%s)", (CREATE_LOCK,))
                    connection.execute(CREATE)
        except BaseException:
            connection.close()
            raise
        return connection

    def _describe(self, exc: Exception) -> str:
        import psycopg  # the driver: loaded by then

        detail = " ".join(str(exc).split("\n")[0].split()) or type(exc).__name__
        if isinstance(exc, psycopg.OperationalError):
            return _masked(f"{self.where} is unreachable ({detail})")
        return _masked(f"{self.where}: {detail}")

    def _structure(self, raw: Any) -> AgentRecord:
        return structure_record(raw, self.machine, self.where)


@attrs.define
class _Link:
    """This process's connection to one registry URL, and the lock that gives it to one caller at a time."""

    connection: psycopg.Connection | None = None
    lock: threading.Lock = attrs.field(factory=threading.Lock)


_links: dict[str, _Link] = {}
_links_lock = threading.Lock()


def _link(url: str) -> _Link:
    with _links_lock:
        return _links.setdefault(url, _Link())
