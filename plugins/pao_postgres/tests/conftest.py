"""Fixtures of pao-postgres: the store under test on both dialects, and an in-process CLI.

``longterm`` is parametrized: ``sqlite`` (the embedded default, no URL) and
``postgres`` (a real server: ``PAO_TEST_POSTGRES_URL``, else a throwaway cluster
started once per session by :mod:`pao_testing.postgres`). Each test gets its own
PAO_HOME, HOME and config file, and on PostgreSQL its own schema.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Iterator

import pytest

from pao_core.plugins import reset_plugins
from pao_postgres.store.engine import dispose_all
from pao_testing.postgres import postgres_url

from longterm_helpers import Longterm


@pytest.fixture(scope="session")
def postgres_server_url() -> Iterator[str]:
    """A reachable PostgreSQL URL for the whole session (with its password)."""
    with postgres_url() as url:
        yield url
    dispose_all()


@pytest.fixture
def pao_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Private HOME, PAO_HOME and PAO_CONFIG; no inherited pao variables."""
    for name in ("PAO_LOAD_PLUGINS", "PAO_DISABLE_PLUGINS", "PAO_POSTGRES_URL", "PAO_HISTORY_URL", "PAO_MEMORY_FILE",
                 "MEMORY_FILE_PATH"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "user").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("PAO_HOME", str(tmp_path / "pao"))
    config = tmp_path / "config.toml"
    config.write_text("")
    monkeypatch.setenv("PAO_CONFIG", str(config))
    reset_plugins()
    yield tmp_path
    reset_plugins()


@pytest.fixture(params=["sqlite", "postgres"])
def longterm(request: pytest.FixtureRequest, pao_env: Path) -> Iterator[Longterm]:
    url = schema = None
    if request.param == "postgres":
        url = request.getfixturevalue("postgres_server_url")
        schema = "t_" + uuid.uuid4().hex[:12]
    env = Longterm(request.param, pao_env / "pao", pao_env / "config.toml", url, schema)
    env.configure()
    yield env
    if url:
        import psycopg

        with psycopg.connect(url, autocommit=True, connect_timeout=10) as connection:
            connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
