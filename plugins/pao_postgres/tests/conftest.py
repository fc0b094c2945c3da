"""Fixtures of pao-postgres: the store under test on both dialects, and an in-process CLI.

``longterm`` is parametrized: ``sqlite`` (the embedded default, no URL) and
``postgres`` (a real server: ``PAO_TEST_POSTGRES_URL``, else a throwaway cluster
started once per session by :mod:`pao_postgres.testing`). Each test gets its own
PAO_HOME, HOME and config file, and on PostgreSQL its own schema.
"""

from __future__ import annotations

import contextlib
import io
import json
import uuid
from pathlib import Path
from typing import Iterator

import attrs
import pytest

from pao_core.plugins import reset_plugins
from pao_postgres.engine import dispose_all
from pao_postgres.testing import postgres_url

EVAL_MEMORY = Path(__file__).resolve().parents[3] / "shared" / "eval" / "memory.jsonl"
if not EVAL_MEMORY.exists():  # CI clones the repository beside a copy of shared/
    EVAL_MEMORY = Path(__file__).resolve().parents[4] / "shared" / "eval" / "memory.jsonl"


@pytest.fixture(scope="session")
def postgres_server_url() -> Iterator[str]:
    """A reachable PostgreSQL URL for the whole session (with its password)."""
    with postgres_url() as url:
        yield url
    dispose_all()


@attrs.define
class Longterm:
    """One isolated pao environment whose longterm store is ``dialect``."""

    dialect: str
    home: Path
    config_file: Path
    url: str | None
    schema: str | None

    def configure(self, extra: str = "") -> None:
        lines = ["[backends.longterm]"]
        if self.url:
            lines.append(f'url = "{self.url}"')
            lines.append(f'schema = "{self.schema}"')
        self.config_file.write_text("\n".join(lines) + "\n" + extra)

    def pao(self, *argv: str) -> tuple[int, str, str]:
        """Run ``pao ARGV`` in this process; return (exit code, stdout, stderr)."""
        from pao_core.cli import main

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
        return code, out.getvalue(), err.getvalue()

    def pao_json(self, *argv: str) -> object:
        code, out, err = self.pao(*argv, "--json")
        assert code == 0, err
        return json.loads(out)


@pytest.fixture
def pao_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Private HOME, PAO_HOME and PAO_CONFIG; no inherited pao variables."""
    for name in ("PAO_LOAD_PLUGINS", "PAO_DISABLE_PLUGINS", "PAO_POSTGRES_URL", "PAO_HISTORY_URL"):
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
