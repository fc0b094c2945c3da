"""The close step: a backend (and the PostgreSQL registry store) closes its server sessions when the
host is done with it, and a later use opens new ones."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import psycopg

from pao_postgres.backend import LongtermBackend
from pao_postgres.options import LongtermOptions
from pao_postgres.registry import PostgresRegistry


def sessions(url: str, application: str) -> set[int]:
    """The server's sessions of ``application`` (pids), seen from an admin connection of its own."""
    with psycopg.connect(url, autocommit=True, connect_timeout=10) as admin:
        rows = admin.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s", (application,))
        return {row[0] for row in rows}


def gone(url: str, application: str, pids: set[int]) -> bool:
    """Whether every one of ``pids`` has left the server (it notices a closed socket at once, but
    asynchronously: a few moments are allowed)."""
    until = time.monotonic() + 5
    while sessions(url, application) & pids:
        if time.monotonic() > until:
            return False
        time.sleep(0.05)
    return True


def test_a_closed_backend_leaves_the_server_and_searches_again(postgres_server_url: str, tmp_path: Path) -> None:
    schema = "close_" + uuid.uuid4().hex[:10]
    options = LongtermOptions(url=postgres_server_url, schema=schema, warm_searcher=False, semantic=False)
    backend = LongtermBackend("longterm", options, tmp_path)
    try:
        backend.store.add("Gus", "notarization fails on the release build")  # the store's pooled engine
        assert [item.id for item in backend.search("notarization build", 5, time.monotonic() + 10)] == ["obs:Gus#0"]
        opened = sessions(postgres_server_url, "pao")
        assert opened  # the search's kept connection and the engine's pooled one stay open between uses

        backend.close()
        assert gone(postgres_server_url, "pao", opened)
        assert [item.id for item in backend.search("notarization build", 5, time.monotonic() + 10)] == ["obs:Gus#0"]
    finally:
        backend.close()
        with psycopg.connect(postgres_server_url, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def test_a_closed_registry_store_leaves_the_server_and_reads_again(postgres_server_url: str) -> None:
    registry = PostgresRegistry(postgres_server_url, "alpha")
    before = registry.names()
    opened = sessions(postgres_server_url, "pao-registry")
    assert len(opened) == 1  # one connection per URL and process

    registry.close()
    assert gone(postgres_server_url, "pao-registry", opened)
    assert registry.names() == before
    registry.close()
