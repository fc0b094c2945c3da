"""A broken store is a BackendResult error within a second, with one line and no password."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from longterm_helpers import EVAL_MEMORY, Longterm
from pao_core.plugins import load_config
from pao_core.gather import gather
from pao_postgres.backend import LongtermBackend
from pao_postgres.options import LongtermOptions
from pao_testing.postgres import PASSWORD, free_port


def backend(url: str, home: Path, **options: object) -> LongtermBackend:
    return LongtermBackend("longterm", LongtermOptions(url=url, **options), home)


@contextlib.contextmanager
def seeded_store(url: str, home: Path, prefix: str) -> Iterator[tuple[LongtermBackend, str]]:
    """A server store in a schema of its own holding one observation; the schema is dropped after."""
    import psycopg

    schema = prefix + str(free_port())
    store = backend(url, home, schema=schema)
    store.store.add("Gus", "notarization fails on the release build")
    try:
        yield store, schema
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def gathered(store: LongtermBackend, timeout: float = 2.0):
    started = time.monotonic()
    result = gather([store], "fix the notarization failure", limit=10, timeout=timeout)["longterm"]
    return result, time.monotonic() - started


def assert_one_line_error(result, *secrets: str) -> None:
    assert result.status == "error", result
    assert result.error and "\n" not in result.error
    for secret in secrets:
        assert secret not in result.error


def test_server_down(tmp_path: Path) -> None:
    url = f"postgresql://pao:{PASSWORD}@127.0.0.1:{free_port()}/pao"
    result, elapsed = gathered(backend(url, tmp_path))
    assert_one_line_error(result, PASSWORD)
    assert elapsed < 1.0


def test_wrong_password(postgres_server_url: str, tmp_path: Path) -> None:
    url = postgres_server_url.replace(PASSWORD, "not-the-password-42")
    result, elapsed = gathered(backend(url, tmp_path))
    assert_one_line_error(result, "not-the-password-42", PASSWORD)
    assert "password authentication failed" in result.error
    assert elapsed < 1.0


def test_missing_tables(postgres_server_url: str, tmp_path: Path) -> None:
    result, elapsed = gathered(backend(postgres_server_url, tmp_path, schema="never_initialised"))
    assert_one_line_error(result, PASSWORD)
    assert "pao memory init" in result.error
    assert elapsed < 1.0


def test_unsupported_url(tmp_path: Path) -> None:
    result, _ = gathered(backend("mysql://root:hunter2@localhost/db", tmp_path))
    assert_one_line_error(result, "hunter2")


def test_hung_server_costs_its_deadline(tmp_path: Path) -> None:
    """A server that accepts connections and never answers: the pipeline stops waiting."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.append(listener.accept()[0]), daemon=True).start()
    try:
        url = f"postgresql://pao:{PASSWORD}@127.0.0.1:{listener.getsockname()[1]}/pao"
        result, elapsed = gathered(backend(url, tmp_path), timeout=0.5)
        assert result.status in ("timeout", "error")
        assert elapsed < 0.5 + 1.0
    finally:
        listener.close()
        for conn in held:
            conn.close()


def test_health_and_config_mask_the_password(longterm: Longterm, monkeypatch: pytest.MonkeyPatch) -> None:
    longterm.pao("memory", "import", str(EVAL_MEMORY))
    store = backend(longterm.url or "", longterm.home, schema=longterm.schema or "")
    line = store.health(time.monotonic() + 5)
    assert "912 observations of 230 entities" in line and "\n" not in line
    assert PASSWORD not in line
    code, out, _ = longterm.pao("config")
    assert code == 0 and PASSWORD not in out
    code, out, _ = longterm.pao("memory", "stats")
    assert code == 0 and PASSWORD not in out
    if longterm.url:
        monkeypatch.setenv("PAO_POSTGRES_URL", longterm.url)
        assert load_config().backends["longterm"]["url"] == longterm.url
        code, out, _ = longterm.pao("config", "--json")
        assert PASSWORD not in out and "***" in out


def test_server_restart_is_survived(tmp_path: Path) -> None:
    """The pool notices dead connections after a server restart (pre-ping), searches go on."""
    from pao_testing.postgres import ThrowawayCluster

    cluster = ThrowawayCluster.start()
    try:
        store = backend(cluster.url, tmp_path)
        store.store.init()
        assert store.search("anything", 5, time.monotonic() + 5) == []
        cluster.kill()
        result, elapsed = gathered(store)
        assert_one_line_error(result, PASSWORD)
        assert elapsed < 1.0
        cluster.restart()
        assert store.search("anything", 5, time.monotonic() + 5) == []
    finally:
        cluster.stop()


def test_deadline_already_passed(tmp_path: Path) -> None:
    store = backend("", tmp_path)
    store.store.add("x", "some text")
    with pytest.raises(Exception, match="deadline"):
        store.search("some text", 5, time.monotonic() - 1)


def test_hooks_module_imports_nothing_heavy() -> None:
    code = (
        "import sys, pao_postgres.hooks, pao_postgres.backend, pao_postgres.commands;"
        "heavy = [m for m in ('sqlalchemy', 'psycopg') if m in sys.modules];"
        "print(heavy); sys.exit(1 if heavy else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_blocked_search_stops_at_its_deadline_and_the_pool_recovers(postgres_server_url: str, tmp_path: Path) -> None:
    """The server cancels a search at the deadline (its statement_timeout travels with it),
    and the pooled connection serves the next search."""
    import psycopg

    from pao_postgres.store.engine import LongtermError

    with seeded_store(postgres_server_url, tmp_path, "blocked_") as (store, schema):
        with psycopg.connect(postgres_server_url) as locker:
            locker.execute(f"LOCK TABLE {schema}.observations IN ACCESS EXCLUSIVE MODE")
            release = threading.Timer(5.0, locker.close)  # an unbounded search fails, not hangs
            release.start()
            started = time.monotonic()
            try:
                with pytest.raises(LongtermError, match="deadline"):
                    store.search("notarization release build", 5, time.monotonic() + 0.5)
            finally:
                release.cancel()
            assert time.monotonic() - started < 0.5 + 0.5
        found = store.search("notarization release build", 5, time.monotonic() + 5)
        assert [item.id for item in found] == ["obs:Gus#0"]


def test_server_search_of_a_new_process_imports_no_sqlalchemy(postgres_server_url: str, tmp_path: Path) -> None:
    """A spawn's first search on a server store: psycopg alone, one connection, items with provenance."""
    with seeded_store(postgres_server_url, tmp_path, "fresh_") as (_store, schema):
        code = (
            "import json, sys, time\n"
            "from pathlib import Path\n"
            "from pao_postgres.backend import LongtermBackend\n"
            "from pao_postgres.options import LongtermOptions\n"
            f"backend = LongtermBackend('longterm', LongtermOptions(url={postgres_server_url!r}, schema={schema!r}), Path({str(tmp_path)!r}))\n"
            "found = backend.search('notarization release build', 5, time.monotonic() + 30)\n"
            "print(json.dumps({'ids': [item.id for item in found], 'sqlalchemy': 'sqlalchemy' in sys.modules}))\n"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
        assert json.loads(done.stdout) == {"ids": ["obs:Gus#0"], "sqlalchemy": False}


def test_a_kept_connection_the_server_closed_is_replaced(postgres_server_url: str, tmp_path: Path) -> None:
    import psycopg

    from pao_postgres.searcher import server_read

    with seeded_store(postgres_server_url, tmp_path, "kept_") as (store, _schema):
        assert [item.id for item in store.search("notarization build", 5, time.monotonic() + 5)] == ["obs:Gus#0"]
        with psycopg.connect(postgres_server_url, autocommit=True) as admin:
            kept = [c.info.backend_pid for c in server_read._idle[server_read.libpq_url(postgres_server_url)]]
            assert kept  # the search's connection, kept for the next search
            for pid in kept:
                assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0]
        assert [item.id for item in store.search("notarization build", 5, time.monotonic() + 5)] == ["obs:Gus#0"]


def test_a_forked_child_opens_its_own_connection(postgres_server_url: str, tmp_path: Path) -> None:
    """``pao spawn`` gathers in a forked child: it must not read from its parent's kept socket."""
    import os

    from pao_postgres.searcher import server_read

    with seeded_store(postgres_server_url, tmp_path, "forked_") as (store, _schema):
        assert [item.id for item in store.search("notarization build", 5, time.monotonic() + 5)] == ["obs:Gus#0"]
        parent = [c.info.backend_pid for c in server_read._idle[server_read.libpq_url(postgres_server_url)]]
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: search, report the server process it used, leave without cleanup
            try:
                found = [item.id for item in store.search("notarization build", 5, time.monotonic() + 5)]
                used = [c.info.backend_pid for c in server_read._idle[server_read.libpq_url(postgres_server_url)]]
                os.write(write, json.dumps({"found": found, "used": used}).encode())
            finally:
                os._exit(0)
        os.close(write)
        with os.fdopen(read) as pipe:
            child = json.loads(pipe.read())
        os.waitpid(pid, 0)
        assert child["found"] == ["obs:Gus#0"] and not set(child["used"]) & set(parent)
        assert [item.id for item in store.search("notarization build", 5, time.monotonic() + 5)] == ["obs:Gus#0"]
