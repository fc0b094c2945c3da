"""Fault suite, registry: 16 processes x 100 random operations, and locks left by killed processes.

Every operation goes through the registry API (what ``pao spawn``, ``kill`` and the
lifecycle commands call; ``pao_testing.registry_workload``) and is written to its worker's
journal; replaying the journals must give exactly the registry on disk: nothing lost,
nothing duplicated. ``test_registry_postgres`` runs the same workload on two machines.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from pao_core.files import lock_is_held, state_lock
from pao_agents.registry import JsonRegistry
from pao_testing.registry_workload import assert_holds, read_journal, record, replay

WORKERS = 16
OPERATIONS = 100
TESTS = Path(__file__).resolve().parent


def test_sixteen_processes_of_random_operations_account_for_every_one(tmp_path: Path) -> None:
    home = tmp_path / "pao"
    journals = tmp_path / "journals"
    journals.mkdir()
    (tmp_path / "config.toml").write_text('[machine]\nname = "here"\n')
    env = {**os.environ, "PAO_HOME": str(home), "PAO_CONFIG": str(tmp_path / "config.toml")}
    workers = [
        subprocess.Popen([sys.executable, "-m", "pao_testing.registry_workload", str(w), str(OPERATIONS),
                          str(journals / f"{w}.jsonl"), "derived"], cwd=TESTS, env=env, stderr=subprocess.PIPE, text=True)
        for w in range(WORKERS)
    ]
    for process in workers:
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
    expected = replay((w, read_journal(journals / f"{w}.jsonl")) for w in range(WORKERS))
    assert expected.operations == WORKERS * OPERATIONS
    assert_holds(JsonRegistry(home, "here").list(), expected, dict.fromkeys(range(WORKERS), "here"))
    assert not lock_is_held(home / "agents.json.lock")
    assert sorted(p.name for p in home.iterdir()) == ["agents.json", "agents.json.lock"]  # no temp file left


HOLD_THE_LOCK = """
import sys, time
from pao_core.files import state_lock
with state_lock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(600)
"""

KEEP_ADDING = """
import sys
from pathlib import Path
from pao_agents.spec import AgentRecord
from pao_agents.registry import JsonRegistry
registry = JsonRegistry(Path(sys.argv[1]))
for n in range(100000):
    name = f"{sys.argv[2]}-{n}"
    registry.add(AgentRecord(name=name, folder="/srv", topic="t", host="fake", terminal="tmux", target=""))
    print(name, flush=True)
"""


def test_a_lock_held_by_a_killed_process_is_taken_over(tmp_path: Path) -> None:
    registry = JsonRegistry(tmp_path)
    registry.add(record("before", 0))
    lock = tmp_path / "agents.json.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_THE_LOCK, str(lock)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout and holder.stdout.readline().strip() == "held"
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(10)
    assert lock.exists()  # left behind by the dead process; the kernel released its flock
    started = time.monotonic()
    registry.add(record("after", 0))
    assert time.monotonic() - started < 2.0
    assert registry.names() == {"before", "after"}
    assert not lock_is_held(lock)


def test_processes_killed_mid_write_lose_nothing_they_finished(tmp_path: Path) -> None:
    """SIGKILL at random moments of a stream of adds: every add that returned is there, the file parses."""
    rng = random.Random(7)
    finished: list[str] = []
    for round_ in range(6):
        child = subprocess.Popen([sys.executable, "-c", KEEP_ADDING, str(tmp_path), f"r{round_}"],
                                 stdout=subprocess.PIPE, text=True)
        assert child.stdout
        first = child.stdout.readline().strip()  # it is writing now
        time.sleep(rng.uniform(0.02, 0.3))
        os.kill(child.pid, signal.SIGKILL)
        rest, _ = child.communicate(timeout=10)
        finished += [first, *rest.split()]
        with state_lock(tmp_path / "agents.json.lock", timeout=5):  # the killed writer's lock is free
            pass
        names = JsonRegistry(tmp_path).names()
        assert set(finished) <= names
        assert len(names - set(finished)) <= round_ + 1  # at most the one add per kill that ended unreported
    json.loads((tmp_path / "agents.json").read_text())
