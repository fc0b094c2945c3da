"""One registry for all machines: two "machines" (two PAO_HOMEs, each with its own
``[machine] name``) sharing one real PostgreSQL server as their registry.

The server is a throwaway cluster (``pao_testing.postgres``, run as an unprivileged user
when the tests run as root); every test gets a database of its own, so each one also
sees the table created on first use.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Iterator

import attrs
import psycopg
import pytest

from pao_testing.homes import isolated_home  # noqa: F401  (fixture: every test in a home of its own)
from pao_testing.lifecycle.fixtures import Pao, pao  # noqa: F401  (fixture)
from pao_core.plugins import load_config
from pao_agents.spec import DuplicateAgent, RegistryUnavailable, UnknownAgent
from pao_core.plugins import get_plugins
from pao_agents.spec import open_registry, registry_options
from pao_testing.postgres import ThrowawayCluster, free_port
from pao_testing.registry_workload import COUNTER, assert_holds, read_journal, record, replay

TESTS = Path(__file__).resolve().parent


def run_pao(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``pao ARGS`` as a process of its own (the ``pao`` fixture here is the lifecycle one, in-process)."""
    return subprocess.run([sys.executable, "-m", "pao_core", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


@attrs.frozen
class Machine:
    """One machine: its own PAO_HOME and configuration, naming it and the shared registry."""

    name: str
    root: Path
    url: str

    @classmethod
    def make(cls, root: Path, name: str, url: str) -> Machine:
        machine = cls(name, root / name, url)
        (machine.root / "home").mkdir(parents=True)
        machine.config.write_text(f'[machine]\nname = "{name}"\n\n[registry]\nurl = "{url}"\n')
        return machine

    @property
    def config(self) -> Path:
        return self.root / "config.toml"

    @property
    def env(self) -> dict[str, str]:
        return {"PAO_HOME": str(self.root / "pao"), "PAO_CONFIG": str(self.config), "HOME": str(self.root / "home")}

    def pao(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run_pao(*args, env=self.env)

    def registry(self):  # type: ignore[no-untyped-def]
        return open_registry(load_config({**os.environ, **self.env}), get_plugins())

    def workers(self, first: int, count: int, operations: int, journals: Path, *mode: str) -> list[subprocess.Popen]:
        return [
            subprocess.Popen(
                [sys.executable, "-m", "pao_testing.registry_workload", str(w), str(operations), str(journals / f"{w}.jsonl"),
                 *mode],
                cwd=TESTS, env={**os.environ, **self.env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )
            for w in range(first, first + count)
        ]


@pytest.fixture(scope="module")
def cluster() -> Iterator[ThrowawayCluster]:
    server = ThrowawayCluster.start()
    try:
        yield server
    finally:
        server.stop()


def fresh_database(cluster: ThrowawayCluster) -> str:
    name = "reg_" + uuid.uuid4().hex[:10]
    with psycopg.connect(cluster.url, autocommit=True, connect_timeout=10) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    return cluster.url.rsplit("/", 1)[0] + "/" + name


@pytest.fixture
def machines(cluster: ThrowawayCluster, tmp_path: Path) -> tuple[Machine, Machine]:
    url = fresh_database(cluster)
    return Machine.make(tmp_path, "alpha", url), Machine.make(tmp_path, "beta", url)


def test_every_machine_lists_the_agents_of_both_with_their_machine(machines: tuple[Machine, Machine]) -> None:
    alpha, beta = machines
    alpha.registry().add(record("api", 1))
    beta.registry().add(record("trainer", 2))
    with pytest.raises(DuplicateAgent, match="an agent named 'api' already exists"):
        beta.registry().add(record("api", 2))  # the name is the whole registry's, not one machine's
    for machine in machines:
        listed = machine.pao("list", "--json")
        assert listed.returncode == 0, listed.stderr
        agents = {agent["name"]: agent["machine"] for agent in json.loads(listed.stdout)["agents"]}
        assert agents == {"api": "alpha", "trainer": "beta"}, machine.name
        table = machine.pao("list")
        assert table.stdout.split("\n")[0].split()[:3] == ["NAME", "STATE", "MACHINE"]
    for machine, name in ((alpha, "api"), (beta, "trainer")):  # (another machine's agent: asked there, docs/machines.md)
        status = machine.pao("status", name, "--json")
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["machine"] == machine.name
    doctor = json.loads(alpha.pao("doctor", "--json").stdout)
    (registry,) = [check for check in doctor["checks"] if check["area"] == "registry"]
    masked = alpha.url.replace(":pao-test-secret@", ":***@")
    assert (registry["name"], registry["status"], registry["line"]) == ("postgresql", "ok", f"registry {masked}: 2 agents")
    forgot = beta.pao("kill", "--forget", "api", "--json")
    assert forgot.returncode == 0, forgot.stderr
    assert [agent["name"] for agent in json.loads(alpha.pao("list", "--json").stdout)["agents"]] == ["trainer"]
    assert not (alpha.root / "pao" / "agents.json").exists() and not (beta.root / "pao" / "agents.json").exists()


def test_changing_or_removing_a_mistyped_name_says_which_agent_was_meant(machines: tuple[Machine, Machine]) -> None:
    """As the file registry does (UnknownAgent.named with the names there are)."""
    alpha, beta = machines
    alpha.registry().add(record("trainer", 1))
    with pytest.raises(UnknownAgent, match="no agent named 'trainr'.*did you mean 'trainer'"):
        beta.registry().change("trainr", lambda agent: agent)
    with pytest.raises(UnknownAgent, match="no agent named 'traner'.*did you mean 'trainer'"):
        beta.registry().remove("traner")
    assert beta.registry().names() == {"trainer"}  # nothing removed or changed on the way


def test_two_machines_of_eight_processes_lose_and_duplicate_nothing(
    machines: tuple[Machine, Machine], tmp_path: Path
) -> None:
    """2 machines x 8 processes x 100 operations: adds (named, derived from one folder name by both
    machines, and raced for), updates, increments of one shared record, removals and reads."""
    alpha, beta = machines
    alpha.registry().add(record(COUNTER, 0))
    journals = tmp_path / "journals"
    journals.mkdir()
    processes = alpha.workers(0, 8, 100, journals) + beta.workers(8, 8, 100, journals)
    for process in processes:
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
    expected = replay((w, read_journal(journals / f"{w}.jsonl")) for w in range(16))
    assert expected.operations == 16 * 100 and expected.count > 100 and expected.race_winners
    records = beta.registry().list()
    assert_holds(records, expected, {w: "alpha" if w < 8 else "beta" for w in range(16)})
    listed = alpha.pao("list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert {a["name"]: a["machine"] for a in json.loads(listed.stdout)["agents"]} == {r.name: r.machine for r in records}


def test_machines_starting_at_once_on_an_empty_database_create_the_table_once(
    machines: tuple[Machine, Machine]
) -> None:
    alpha, beta = machines
    runs = [subprocess.Popen([sys.executable, "-m", "pao_core", "list", "--json"], env={**os.environ, **m.env},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for m in (alpha, beta) * 4]
    for run in runs:
        out, err = run.communicate(timeout=120)
        assert run.returncode == 0 and err == "" and json.loads(out) == {"agents": []}, err
    with psycopg.connect(alpha.url, connect_timeout=10) as connection:
        assert connection.execute("SELECT count(*) FROM pg_tables WHERE tablename = 'pao_agents'").fetchone() == (1,)


def _one_clear_line(run: subprocess.CompletedProcess[str], url: str) -> str:
    """A refusal: exit 1, one line on stderr naming the registry with its password masked."""
    masked = url.replace(":pao-test-secret@", ":***@")
    assert run.returncode == 1, run.stderr
    assert len(run.stderr.splitlines()) == 1, run.stderr
    line = run.stderr.strip()
    assert line.startswith(f"pao: registry {masked} is unreachable ("), line
    assert "pao-test-secret" not in run.stderr + run.stdout and "Traceback" not in run.stderr
    return line


def test_a_registry_server_that_is_down_is_one_clear_line_and_never_the_file(tmp_path: Path) -> None:
    url = f"postgresql://pao:pao-test-secret@127.0.0.1:{free_port()}/pao"  # nothing listens there
    machine = Machine.make(tmp_path, "alpha", url)
    (tmp_path / "empty.toml").write_text("")
    for args in (("list",), ("list", "--json"), ("status", "api"), ("kill", "--forget", "api"), ("send", "api", "hi")):
        started = time.monotonic()
        run_pao("list", env={**machine.env, "PAO_CONFIG": str(tmp_path / "empty.toml")})  # the same, on the file
        on_file = time.monotonic() - started
        started = time.monotonic()
        _one_clear_line(machine.pao(*args), url)
        assert time.monotonic() - started < 2 * on_file + 5  # a refused connection costs no wait
    assert not (machine.root / "pao" / "agents.json").exists()
    unserved = run_pao("list", env={**machine.env, "PAO_DISABLE_PLUGINS": "pao-postgres"})
    assert unserved.returncode == 2 and len(unserved.stderr.splitlines()) == 1, unserved.stderr
    assert "postgresql://pao:***@127.0.0.1" in unserved.stderr and "pao-test-secret" not in unserved.stderr
    assert not (machine.root / "pao" / "agents.json").exists()


def test_the_server_stopped_mid_run_is_one_line_and_leaves_no_half_written_record(tmp_path: Path) -> None:
    """4 processes on 2 machines write as fast as they can; the server stops under them (immediate
    shutdown: a crash). Each process ends with the one line; once the server is back, the registry
    holds every operation that finished, the one in flight at most whole, and nothing else."""
    server = ThrowawayCluster.start()
    try:
        url = fresh_database(server)
        alpha, beta = Machine.make(tmp_path, "alpha", url), Machine.make(tmp_path, "beta", url)
        journals = tmp_path / "journals"
        journals.mkdir()
        processes = alpha.workers(0, 2, 100_000, journals, "own") + beta.workers(2, 2, 100_000, journals, "own")
        deadline = time.monotonic() + 60
        while sum(len(read_journal(journals / f"{w}.jsonl")) for w in range(4) if (journals / f"{w}.jsonl").exists()) < 400:
            assert time.monotonic() < deadline, "the workers did not get going"
            assert all(p.poll() is None for p in processes), [p.communicate() for p in processes]
            time.sleep(0.05)
        server.kill()
        for process in processes:
            out, err = process.communicate(timeout=60)
            _one_clear_line(subprocess.CompletedProcess(process.args, process.returncode, out, err), url)
        _one_clear_line(alpha.pao("list"), url)
        server.restart()
        records = alpha.registry().list()
        owners = {w: "alpha" if w < 2 else "beta" for w in range(4)}
        for worker in range(4):
            entries = read_journal(journals / f"{worker}.jsonl")
            mine = [r for r in records if r.folder == f"/srv/w{worker}"]
            in_flight = entries[-1] if entries[-1]["phase"] == "try" else None
            finished = replay([(worker, entries)])
            if in_flight is None:
                assert_holds(mine, finished, owners)
                continue
            applied = replay([(worker, [*entries, {**in_flight, "phase": "done"}])])
            try:  # the operation in flight either committed whole or not at all
                assert_holds(mine, finished, owners)
            except AssertionError:
                assert_holds(mine, applied, owners)
    finally:
        server.stop()


@pytest.fixture
def shared_pao(pao: Pao, cluster: ThrowawayCluster, monkeypatch: pytest.MonkeyPatch) -> Pao:
    """The lifecycle fixture (fake host in real tmux) with its registry in PostgreSQL, as machine ``alpha``."""
    import pao_postgres.hooks

    url = fresh_database(cluster)
    monkeypatch.setenv("PAO_LOAD_PLUGINS", "pao-agents,pao-tmux,pao-hosts,pao-postgres")  # for the subprocesses
    get_plugins().manager.register(pao_postgres.hooks, name="postgres")  # the fixture loaded this process's plugins
    config = Path(os.environ["PAO_CONFIG"])
    config.write_text(config.read_text() + f'\n[machine]\nname = "alpha"\n\n[registry]\nurl = "{url}"\n')
    return pao


def _rows(url: str) -> list[tuple[str, str, str]]:
    with psycopg.connect(url, connect_timeout=10) as connection:
        if connection.execute("SELECT to_regclass('pao_agents')").fetchone() == (None,):
            return []  # not created yet: no pao has used this registry
        return connection.execute("SELECT name, machine, record->>'state' FROM pao_agents ORDER BY name").fetchall()


@pytest.mark.hook("pao_registry_stores")
def test_spawn_registers_once_and_a_failed_spawn_leaves_no_agent(shared_pao: Pao, monkeypatch: pytest.MonkeyPatch) -> None:
    url = registry_options(load_config()).url
    code, out, err = shared_pao("spawn", "look around", "--folder", str(shared_pao.folder("api")), "--name", "api", "--no-nudge", "--json")
    assert code == 0, err
    assert json.loads(out)["machine"] == "alpha"
    assert _rows(url) == [("api", "alpha", "ready")]

    monkeypatch.setenv("FAKE_AGENT_EXIT", "fatal: cannot reach the model service")
    code, _, err = shared_pao("spawn", "x", "--folder", str(shared_pao.folder("crash")), "--name", "crash")
    assert code != 0 and err.strip().splitlines()[-1].startswith("pao: crash exited before it was ready")
    assert _rows(url) == [("api", "alpha", "ready")]  # the reservation was taken back
    assert not (shared_pao.home / "agents" / "crash").exists()
    assert [w.split()[0] for w in shared_pao.tmux("list-windows", "-a", "-F", "#{window_name} x").stdout.splitlines()] == ["api"]


def test_the_registry_going_away_mid_spawn_stops_the_agent_and_says_how_to_free_the_name(
    pao: Pao, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = ThrowawayCluster.start()
    try:
        url = fresh_database(server)
        monkeypatch.setenv("PAO_LOAD_PLUGINS", "pao-agents,pao-tmux,pao-hosts,pao-postgres")
        monkeypatch.setenv("PAO_REGISTRY_URL", url)
        spawn = pao.subprocess("spawn", "x", "--folder", str(pao.folder("slow")), "--name", "slow", "--no-nudge",
                               env={"FAKE_AGENT_START_DELAY": "3"})
        deadline = time.monotonic() + 30
        while not _rows(url):  # the name is registered; the agent is starting
            assert time.monotonic() < deadline and spawn.poll() is None, spawn.communicate()
            time.sleep(0.05)
        server.kill()
        _, err = spawn.communicate(timeout=60)
        assert spawn.returncode == 1, err
        line = err.strip().splitlines()[-1]
        masked = url.replace(":pao-test-secret@", ":***@")
        assert line.startswith(f"pao: registry {masked} is unreachable (") and "pao-test-secret" not in err
        assert line.endswith("slow was not started, but the registry still holds its name "
                             "(free it once the registry answers: pao kill --forget slow)")
        assert pao.tmux("list-windows", "-a").stdout == ""  # the agent was stopped
        assert not (pao.home / "agents" / "slow").exists()
        server.restart()
        assert [(name, state) for name, _, state in _rows(url)] == [("slow", "starting")]  # only the name
        forgot = run_pao("kill", "--forget", "slow")
        assert forgot.returncode == 0, forgot.stderr
        assert _rows(url) == []
    finally:
        server.stop()


def test_pao_list_loads_no_sqlalchemy_and_the_driver_only_for_a_postgresql_registry(
    machines: tuple[Machine, Machine], tmp_path: Path
) -> None:
    def imported(env: dict[str, str]) -> set[str]:
        run = subprocess.run([sys.executable, "-X", "importtime", "-m", "pao_core", "list"], capture_output=True,
                             text=True, env={**os.environ, **env}, timeout=60)
        assert run.returncode == 0, run.stderr
        return {line.split("|")[-1].strip().split(".")[0] for line in run.stderr.splitlines() if "|" in line}

    (tmp_path / "empty.toml").write_text("")
    on_file = imported({"PAO_HOME": str(tmp_path / "solo"), "PAO_CONFIG": str(tmp_path / "empty.toml")})
    assert not {"sqlalchemy", "psycopg"} & on_file
    on_postgres = imported(machines[0].env)
    assert "psycopg" in on_postgres and "sqlalchemy" not in on_postgres
