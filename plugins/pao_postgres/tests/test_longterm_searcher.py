"""The warm searcher (pao_postgres.searcher.warm, pao_postgres.searcher.server) with a real server and real searcher processes.

Each test gets its own XDG_RUNTIME_DIR (so its own searchers), its own schema, and
stops every searcher it started. Searches run through ``LongtermBackend.search`` as a
new ``pao`` process runs them (a new backend object each time); whether the searcher
answered is read from the searcher's own count of searches, not guessed.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Callable, Iterator

import attrs
import pytest

from pao_postgres.searcher import warm
from pao_postgres.backend import LongtermBackend
from pao_postgres.options import LongtermOptions

pytestmark = pytest.mark.postgres
NAME = "longterm"
IDLE_S = 2
"""A searcher's idle time in the tests of its idle exit (the least a user may set is 1 s)."""


@attrs.define
class Store:
    options: LongtermOptions
    home: Path
    url: str

    def backend(self, **changes: object) -> LongtermBackend:
        return LongtermBackend(NAME, attrs.evolve(self.options, **changes), self.home)

    def search(self, topic: str, deadline_s: float = 20.0, **changes: object) -> list:
        return list(self.backend(**changes).search(topic, 10, time.monotonic() + deadline_s))

    def status(self, **changes: object) -> dict | None:
        return warm.status(attrs.evolve(self.options, **changes), self.home, NAME, time.monotonic() + 5)

    def wait_running(self, timeout: float = 90.0, **changes: object) -> dict:
        limit = time.monotonic() + timeout
        while time.monotonic() < limit:
            found = self.status(**changes)
            if found and "pid" in found:
                return found
            time.sleep(0.1)
        raise AssertionError(f"no warm searcher after {timeout} s: {os.listdir(warm.runtime_dir())}")

    def files(self, **changes: object) -> dict[str, Path]:
        key = warm.store_key(attrs.evolve(self.options, **changes), self.home, NAME)
        return warm.paths(warm.runtime_dir(), key)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is gone for our purpose (it is nobody's searcher any more)
    state = Path(f"/proc/{pid}/stat")
    return not (state.exists() and state.read_text().split(") ", 1)[1].startswith("Z"))


def _wait_gone(pid: int, timeout: float = 30.0) -> bool:
    limit = time.monotonic() + timeout
    while time.monotonic() < limit:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return False


@pytest.fixture
def store(postgres_server_url: str, pao_env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    import psycopg

    from pao_postgres.store.longterm import LongtermStore

    monkeypatch.delenv(warm.ENV, raising=False)  # the configuration decides, as for a user
    runtime = pao_env / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    schema = "t_" + uuid.uuid4().hex[:12]
    options = LongtermOptions(url=postgres_server_url, schema=schema, semantic=False)
    home = pao_env / "pao"
    seeded = LongtermStore(options, home)
    seeded.init()
    seeded.add("Gus", "smells of acetone when underfed")
    seeded.add("Gus", "sleeps on the heater in winter")
    seeded.add("Shop app", "keeps its sessions in redis")
    yield Store(options, home, postgres_server_url)
    pids = warm.stop_all(time.monotonic() + 5)
    for lock in runtime.glob("pao/lt-*.lock"):  # any left (killed tests): by the pid its lock holds
        text = lock.read_text().strip()
        if text and _alive(int(text)):
            pids.append(int(text))
            os.kill(int(text), signal.SIGKILL)
    for pid in pids:
        _wait_gone(pid, 10)
    with psycopg.connect(postgres_server_url, autocommit=True, connect_timeout=10) as connection:
        connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def test_started_on_demand_then_reused_with_the_same_answers(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PAO_TEST_POSTGRES_URL", raising=False)  # the tests' own copy of the URL
    monkeypatch.setenv("PAO_POSTGRES_URL", store.url)  # as a user may set it: not handed on
    assert store.status() is None
    first = store.search("gus acetone")  # no searcher: in-process, and one is started for the next process
    assert [item.id for item in first] == ["obs:Gus#0", "obs:Gus#1"]
    running = store.wait_running()
    password = store.url.split("://", 1)[1].split("@", 1)[0].partition(":")[2]
    assert password
    for view in ("cmdline", "environ"):  # the URL reached it through a pipe
        if Path(f"/proc/{running['pid']}/{view}").exists():
            assert password.encode() not in Path(f"/proc/{running['pid']}/{view}").read_bytes(), view
    files = store.files()
    for path, mode in ((files["sock"], 0o600), (files["lock"], 0o600), (warm.runtime_dir(), 0o700)):
        assert stat.S_IMODE(os.stat(path).st_mode) == mode, path
    assert store.search("gus acetone") == first
    assert store.search("sessions redis") == store.search("sessions redis", warm_searcher=False)
    again = store.status()
    assert again["pid"] == running["pid"] and again["searches"] == running["searches"] + 2
    # a second start finds the lock taken: still one searcher
    assert warm.start(store.options, store.home, NAME) is False
    assert len(list(warm.runtime_dir().glob("lt-*.sock"))) == 1


def test_a_searcher_started_for_other_settings_never_answers(store: Store) -> None:
    store.search("gus acetone")
    lexical = store.wait_running()
    other = attrs.evolve(store.options, mode="original")
    key = warm.store_key(other, store.home, NAME)
    own = store.files()["sock"]
    # asked on its socket with another key, it refuses (and the client searches in-process)
    connection = socket.socket(socket.AF_UNIX)
    connection.connect(str(own))
    answer = warm.exchange(connection, {"protocol": warm.PROTOCOL, "key": key, "op": "search", "query": "gus",
                                        "limit": 10, "budget": 5, "memory_file": None}, time.monotonic() + 5)
    connection.close()
    assert answer == {"refused": "other settings"}
    own_key = warm.store_key(store.options, store.home, NAME)
    bad = warm.request(own_key, {"op": "search", "query": "gus", "limit": "ten", "budget": 5, "memory_file": None},
                       time.monotonic() + 5)
    assert bad == {"failed": "ValueError"}  # a request it cannot serve: answered so, and it serves on
    found = store.search("gus acetone", mode="original")
    assert [item.id for item in found][:1] == ["obs:Gus#0"]
    assert store.status()["searches"] == lexical["searches"]  # not asked
    assert store.wait_running(mode="original")["pid"] != lexical["pid"]  # the other settings got their own


def test_stale_socket_and_killed_searcher_fall_back_then_a_new_one_starts(store: Store) -> None:
    store.search("gus acetone")
    pid = store.wait_running()["pid"]
    os.kill(pid, signal.SIGKILL)
    assert _wait_gone(pid)
    assert store.files()["sock"].exists()  # a stale socket file
    expected = store.search("gus acetone", warm_searcher=False)
    assert store.search("gus acetone") == expected  # refused connection: in-process, and a new one starts
    assert store.wait_running()["pid"] != pid
    assert store.search("gus acetone") == expected


def _search_while_locked(store: Store, deadline_s: float, until: Callable[[], bool],
                         then: Callable[[], None] = lambda: None) -> tuple[LongtermBackend, list]:
    """A search (a new backend) while another transaction holds the observations table, which
    the searcher's query waits for: once ``until()`` holds, ``then()``, and the lock goes."""
    import psycopg

    done: dict = {}
    backend = store.backend()
    with psycopg.connect(store.url, connect_timeout=10) as blocker:
        blocker.execute(f"LOCK TABLE {store.options.schema}.observations IN ACCESS EXCLUSIVE MODE")
        worker = threading.Thread(target=lambda: done.update(items=list(backend.search("gus acetone", 10,
                                                                                        time.monotonic() + deadline_s))))
        worker.start()
        limit = time.monotonic() + 20
        while time.monotonic() < limit and not until():
            time.sleep(0.05)
        assert until()
        then()
        blocker.rollback()  # the in-process search it fell back to goes on
    worker.join(20)
    assert not worker.is_alive()
    return backend, done["items"]


def test_a_searcher_killed_mid_request_costs_the_search_nothing(store: Store) -> None:
    expected = store.search("gus acetone", warm_searcher=False)
    store.search("gus acetone")
    pid = store.wait_running()["pid"]
    backend, found = _search_while_locked(store, 30, lambda: _waiting_on_lock(store.url),
                                          lambda: os.kill(pid, signal.SIGKILL))
    assert found == expected and backend._searched_here


def test_a_slow_searcher_is_not_waited_for_past_its_share_then_skipped(store: Store) -> None:
    expected = store.search("gus acetone", warm_searcher=False)
    store.search("gus acetone")
    before = store.wait_running()["searches"]
    # given up on at half of the 8 s
    backend, found = _search_while_locked(store, 8, lambda: store.files()["slow"].exists())
    assert found == expected and backend._searched_here
    assert store.search("gus acetone") == expected  # skipped for a while: in-process, not asked
    limit = time.monotonic() + 10
    while time.monotonic() < limit and store.status()["searches"] == before:
        time.sleep(0.05)
    assert store.status()["searches"] == before + 1  # only the slow one, finished late


def _waiting_on_lock(url: str) -> bool:
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=10) as connection:
        return bool(connection.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                       "AND application_name = 'pao'").fetchone()[0])


def test_writes_and_the_memory_file_are_reflected_through_the_searcher(store: Store, tmp_path: Path) -> None:
    from pao_postgres.store.longterm import LongtermStore

    memory = tmp_path / "memory.jsonl"
    line = {"type": "entity", "name": "Billing", "entityType": "service", "observations": ["uses redis for queues"]}
    memory.write_text(json.dumps(line) + "\n")
    os.utime(memory, (time.time() - 5, time.time() - 5))
    options = attrs.evolve(store.options, memory_file=memory)
    store.options = options
    assert [i.id for i in store.search("billing queues redis")][:1] == ["obs:Billing#0"]
    before = store.wait_running()
    line["observations"] = ["uses valkey for queues"]
    memory.write_text(json.dumps(line) + "\n")
    os.utime(memory, (time.time() - 5, time.time() - 5))
    found = store.search("billing queues valkey")
    assert [item.text for item in found if item.title == "Billing"] == ["uses valkey for queues"]
    LongtermStore(options, store.home).add("Billing", "invoices are sent on the first of the month")
    assert "invoices are sent on the first of the month" in [item.text for item in store.search("billing invoices month")]
    LongtermStore(options, store.home).forget("Gus")
    assert store.search("gus acetone") == []
    assert store.status()["searches"] == before["searches"] + 3  # every one of them answered by the searcher


def test_only_the_user_is_answered(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    system_python = Path("/usr/bin/python3")  # one that user nobody may run (the venv's may sit in root's folder)
    if os.geteuid() != 0 or not system_python.exists():
        pytest.skip("needs root (and /usr/bin/python3) to connect as another user")
    import shutil
    import tempfile

    runtime = Path(tempfile.mkdtemp(prefix="pao-peer-"))  # in /tmp: another user can reach it once opened
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    try:
        store.search("gus acetone")
        store.wait_running()  # its own user is answered
        folder, sock = warm.runtime_dir(), store.files()["sock"]
        os.chmod(runtime, 0o711)
        os.chmod(folder, 0o711)
        os.chmod(sock, 0o666)  # even when the file's mode lets them in, the peer's uid is checked
        probe = (
            "import json, socket, sys\n"
            "c = socket.socket(socket.AF_UNIX)\n"
            "c.settimeout(10)\n"
            "c.connect(sys.argv[1])\n"
            "try:\n"
            "    c.sendall(json.dumps({'protocol': 1, 'op': 'status', 'key': sys.argv[2]}).encode() + b'\\n')\n"
            "    print('answered' if c.recv(1000) else 'closed')\n"
            "except (BrokenPipeError, ConnectionResetError):\n"
            "    print('closed')\n"
        )
        key = warm.store_key(store.options, store.home, NAME)
        out = subprocess.run([str(system_python), "-c", probe, str(sock), key], user="nobody", capture_output=True,
                             text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "closed"  # without a word
        # a folder that others may enter is not used: in-process, and nothing is started
        assert warm.private_dir() is None and store.status() is None
        assert [item.id for item in store.search("gus acetone")] == ["obs:Gus#0", "obs:Gus#1"]
        assert warm.start(store.options, store.home, NAME) is False
    finally:
        os.chmod(warm.runtime_dir(), 0o700)
        warm.stop_all(time.monotonic() + 5)
        shutil.rmtree(runtime, ignore_errors=True)


def test_idle_exit_and_the_stop_command(store: Store, pao_env: Path) -> None:
    from pao_core.plugins import reset_plugins

    from longterm_helpers import Longterm

    store.search("gus acetone", warm_searcher_idle_s=IDLE_S)
    pid = store.wait_running(warm_searcher_idle_s=IDLE_S)["pid"]
    assert _wait_gone(pid, 40)  # no request for IDLE_S: it exits
    assert not store.files(warm_searcher_idle_s=IDLE_S)["sock"].exists()

    cli = Longterm("postgres", store.home, pao_env / "config.toml", store.url, store.options.schema)
    cli.configure("semantic = false\n")
    reset_plugins()
    assert cli.pao_json("memory", "searcher", "status")["running"] is False
    store.search("gus acetone")
    pid = store.wait_running()["pid"]
    status = cli.pao_json("memory", "searcher", "status")
    assert status["running"] is True and status["pid"] == pid
    code, out, _ = cli.pao("doctor")
    assert f"warm searcher: running (pid {pid}" in out
    assert cli.pao_json("memory", "searcher", "stop")["stopped"] == [pid]
    assert _wait_gone(pid)
    assert cli.pao_json("memory", "searcher", "status")["running"] is False


def test_a_new_searcher_removes_the_files_earlier_settings_left_and_nothing_held_or_not_its_own(store: Store) -> None:
    store.search("gus acetone", warm_searcher_idle_s=IDLE_S)
    earlier = store.wait_running(warm_searcher_idle_s=IDLE_S)["pid"]
    assert _wait_gone(earlier, 40)  # idle: it exits, and its lock stays (its settings may come back)
    stale = store.files(warm_searcher_idle_s=IDLE_S)
    assert stale["lock"].exists()
    stale["slow"].touch()
    folder = warm.runtime_dir()
    held = folder / f"lt-{'0' * 20}.lock"  # a searcher of other settings, still starting: its lock is held
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1], 'a'); "
                               "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(120)", str(held)],
                              stdout=subprocess.PIPE, text=True)
    foreign = [folder / "lt-notakey.lock", folder / "notes.txt"]
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        for path in foreign:
            path.write_text("not the searcher's\n")
        store.search("gus acetone")  # other settings (the default idle time): another key, another searcher
        store.wait_running()
        assert not any(stale[part].exists() for part in ("lock", "sock", "slow")), os.listdir(folder)
        assert held.exists() and all(path.exists() for path in foreign)
        assert store.files()["lock"].exists()
    finally:
        holder.kill()
        holder.wait()
        for path in foreign:
            path.unlink(missing_ok=True)


@pytest.mark.embeddings
def test_results_through_the_searcher_equal_in_process_on_the_eval_corpus(store: Store) -> None:
    """Semantic + lexical (the default), every query of the eval corpus: identical items either way."""
    from pao_postgres.mcpfile import read_memory_file
    from pao_postgres.store.longterm import LongtermStore
    from pao_postgres.store.vectors import refresh_vectors

    from longterm_helpers import EVAL_MEMORY

    store.options = attrs.evolve(store.options, semantic=True)
    loaded = LongtermStore(store.options, store.home)
    loaded.import_memory(read_memory_file(EVAL_MEMORY))
    refresh_vectors(loaded)
    queries = [json.loads(line)["topic"] for line in (EVAL_MEMORY.parent / "queries.jsonl").read_text().splitlines()
               if line.strip()]
    store.search(queries[0])
    before = store.wait_running()["searches"]
    answered = 0
    for topic in queries:
        here = store.search(topic, 60, warm_searcher=False)
        assert store.search(topic, 60) == here, topic
        answered += bool(here)
    assert answered >= len(queries) // 2
    assert store.status()["searches"] == before + len(queries)


def test_pao_brief_processes_through_the_searcher_stay_redacted(store: Store, pao_env: Path) -> None:
    """Real ``pao brief`` processes: the first starts the searcher, the next are answered by it;
    a secret in memory is redacted on that path as on the in-process one."""
    from pao_postgres.store.longterm import LongtermStore

    secret = "ghp_R4nd0mF4k3T0k3nV4lu3xY9qW2eZ8tK1mB7c"
    LongtermStore(store.options, store.home).add("Deploy bot", f"pushes releases with the token {secret}")
    (pao_env / "config.toml").write_text(f'[backends.longterm]\nurl = "{store.url}"\nschema = "{store.options.schema}"\n'
                                         "semantic = false\n")
    environment = {k: v for k, v in os.environ.items() if k not in ("PAO_POSTGRES_URL", warm.ENV)}

    def brief() -> dict:
        done = subprocess.run([sys.executable, "-m", "pao_core", "brief", "deploy bot releases token", "--json"],
                              env=environment, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    first = brief()
    before = store.wait_running()["searches"]
    second = brief()
    assert store.status()["searches"] == before + 1  # answered by the searcher
    for briefing in (first, second):
        texts = [item["text"] for item in briefing["items"] if item["backend"] == "longterm"]
        assert texts and all(secret not in text for text in texts) and any("[redacted]" in text for text in texts)
        assert secret not in json.dumps(briefing)
    assert [i["id"] for i in first["items"]] == [i["id"] for i in second["items"]]
