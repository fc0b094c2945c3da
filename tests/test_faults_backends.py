"""Fault suite, backends: one store failing leaves the other's items in the briefing, within the deadline.

Real parts only: a throwaway PostgreSQL cluster stopped before and during a search, a
real HTTP server on loopback that refuses, hangs or answers garbage, and the embedded
stores loaded through the plugins' own commands. Each briefing is asked for through
``pao brief --json`` with a deadline of DEADLINE seconds per backend.
(Per-store fault tests, one store at a time: plugins/*/tests/test_*_faults.py, *_failures.py.)
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Iterator

import pytest

from pao_core.cli import main
from pao_testing.loopback_stub import QuietServer, serve_in_thread

REPO = Path(__file__).resolve().parents[1]
EVAL = REPO / "tests" / "data" / "eval"
TOPIC = "fix the Zola build failing on Cloudflare Pages preview deploys"
DEADLINE = 1.0
SLACK = 1.0
"""Generous: a failing backend may cost its deadline and this much more, never the other's items."""


def brief(capsys: pytest.CaptureFixture[str], expect_code: int = 0) -> tuple[dict, float]:
    capsys.readouterr()
    started = time.monotonic()
    code = main(["brief", TOPIC, "--json"])
    elapsed = time.monotonic() - started
    out, err = capsys.readouterr()
    assert code == expect_code, err
    if expect_code:
        assert err.startswith("pao: no memory store answered: history (") and err.count("\n") == 1, err
    return json.loads(out), elapsed


def assert_other_store_survives(report: dict, elapsed: float, *, failed: str, survivor: str,
                                status: str = "error") -> None:
    backends = report["backends"]
    assert backends[failed]["status"] == status, backends
    assert backends[failed]["error"] and "\n" not in backends[failed]["error"]
    assert backends[survivor]["status"] == "ok" and backends[survivor]["count"] > 0, backends
    assert {item["backend"] for item in report["items"]} == {survivor}
    assert f"{failed} ({status})" in report["markdown"]  # the briefing says which store is missing
    assert elapsed < DEADLINE + SLACK + 1.0, elapsed  # + pao's own start (plugins, SQLAlchemy import)


def configure(config: Path, *, longterm_url: str = "", history_url: str = "") -> None:
    lines = [f"[gather]\ndeadline = {DEADLINE}\n"]
    if longterm_url:
        lines.append(f'[backends.longterm]\nurl = "{longterm_url}"\n')
    if history_url:
        lines.append(f'[backends.history]\nurl = "{history_url}"\n')
    config.write_text("\n".join(lines))


def load(capsys: pytest.CaptureFixture[str], *commands: list[str]) -> None:
    for command in commands:
        assert main(command) == 0
    capsys.readouterr()


LOAD_LONGTERM = ["memory", "import", str(EVAL / "memory.jsonl")]
LOAD_HISTORY = ["history", "index", str(EVAL / "transcripts")]


# -- PostgreSQL stopped before and during a search ----------------------------------


@pytest.fixture(scope="module")
def cluster() -> Iterator[object]:
    from pao_testing.postgres import ThrowawayCluster

    server = ThrowawayCluster.start()
    yield server
    server.stop()


@pytest.fixture
def running(cluster) -> object:
    if not cluster.is_running():
        cluster.restart()
    return cluster


def test_postgres_stopped_before_the_search(running, pao_config_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pao_testing.postgres import PASSWORD

    configure(pao_config_file, longterm_url=running.url)
    load(capsys, ["memory", "init"], LOAD_LONGTERM, LOAD_HISTORY)
    report, _ = brief(capsys)
    assert report["backends"]["longterm"]["status"] == "ok"  # the set-up works while the server runs
    running.kill()
    report, elapsed = brief(capsys)
    assert_other_store_survives(report, elapsed, failed="longterm", survivor="history")
    assert PASSWORD not in json.dumps(report)


def test_postgres_stopped_during_the_search(running, pao_config_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The search waits on a table lock held by another session; the server dies under it."""
    import psycopg

    schema = "during"
    url = running.url
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    pao_config_file.write_text(
        f'[gather]\ndeadline = 5.0\n[backends.longterm]\nurl = "{url}"\nschema = "{schema}"\n'
    )
    load(capsys, ["memory", "init"], LOAD_LONGTERM, LOAD_HISTORY)
    locker = psycopg.connect(url)
    locker.execute(f"LOCK TABLE {schema}.observations IN ACCESS EXCLUSIVE MODE")
    outcome: dict[str, object] = {}

    def search() -> None:
        outcome["report"], outcome["elapsed"] = brief(capsys)

    thread = threading.Thread(target=search)
    thread.start()
    try:
        waiting = _wait_for_lock_waiter(url)
        assert waiting, "the search never reached the server"
        killed_at = time.monotonic()
        running.kill()
        thread.join(10)
        assert not thread.is_alive()
    finally:
        locker.close()
    report = outcome["report"]
    assert report["backends"]["longterm"]["status"] == "error"
    assert report["backends"]["history"]["count"] > 0
    assert {item["backend"] for item in report["items"]} == {"history"}
    # the dead server ends the wait at once: the 5 s deadline is not spent
    assert time.monotonic() - killed_at < 2.0


def _wait_for_lock_waiter(url: str, timeout: float = 20.0) -> bool:
    import psycopg

    give_up = time.monotonic() + timeout
    with psycopg.connect(url, autocommit=True) as watcher:
        while time.monotonic() < give_up:
            row = watcher.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
            ).fetchone()
            if row and row[0]:
                return True
            time.sleep(0.05)
    return False


# -- a history server that refuses, hangs or answers garbage ---------------------------


class Garbage(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        return

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b"\x1b]0;owned\x07\x00<html>not json \xff\xfe</html>"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def garbage_url() -> Iterator[str]:
    server = QuietServer(("127.0.0.1", 0), Garbage)
    serve_in_thread(server)
    yield f"http://127.0.0.1:{server.server_address[1]}/rpc"
    server.shutdown()
    server.server_close()


@pytest.fixture
def hanging_url() -> Iterator[str]:
    """Accepts connections, reads the request, never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/rpc"
    stop.set()
    thread.join(2)
    listener.close()
    for conn in held:
        conn.close()


@pytest.fixture
def refusing_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/rpc"


@pytest.mark.parametrize(("fault", "status"), [("refusing", "error"), ("hanging", "timeout"), ("garbage", "error")])
def test_a_broken_history_server_leaves_the_longterm_items(
    fault: str, status: str, request: pytest.FixtureRequest, pao_config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = request.getfixturevalue(f"{fault}_url")
    load(capsys, LOAD_LONGTERM)
    configure(pao_config_file, history_url=url)
    report, elapsed = brief(capsys)
    assert_other_store_survives(report, elapsed, failed="history", survivor="longterm", status=status)
    assert "\x1b" not in json.dumps(report["backends"], ensure_ascii=False)


def test_both_stores_down_still_gives_a_briefing_within_the_deadline(
    hanging_url: str, refusing_url: str, pao_config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pao_testing.postgres import PASSWORD

    configure(pao_config_file, history_url=hanging_url,
              longterm_url=refusing_url.replace("http://", f"postgresql://pao:{PASSWORD}@").replace("/rpc", "/pao"))
    report, elapsed = brief(capsys, expect_code=1)  # the briefing is printed, and the exit says no store answered
    assert {name: b["status"] for name, b in report["backends"].items()} == {"history": "timeout", "longterm": "error"}
    assert report["items"] == [] and report["markdown"].strip()
    assert elapsed < DEADLINE + SLACK + 1.0
    assert PASSWORD not in json.dumps(report)
