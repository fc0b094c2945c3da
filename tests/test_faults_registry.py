"""Fault suite, registry: 16 processes x 100 random operations, and locks left by killed processes.

Every operation goes through the public ``Registry`` API (what ``pao spawn``, ``kill``
and the lifecycle commands call) and is written to its worker's journal; replaying
the journals must give exactly the registry on disk: nothing lost, nothing duplicated.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from pao_core.files import lock_is_held, state_lock
from pao_core.models import AgentRecord
from pao_agents.registry import JsonRegistry
from pao_agents.names import numbered

WORKERS = 16
OPERATIONS = 100
STATES = ("starting", "ready", "busy", "waiting", "blocked", "paused", "dead")


def _record(name: str, worker: int) -> AgentRecord:
    return AgentRecord(name=name, folder=f"/srv/w{worker}", topic="t", host="fake", terminal="tmux", target="")


def _worker(home: str, worker: int, journal: str) -> None:
    """Random spawns (named and derived), updates, removals and reads; each one journaled."""
    registry = JsonRegistry(Path(home))
    rng = random.Random(worker)
    mine: list[str] = []
    done: list[list] = []
    for op in range(OPERATIONS):
        choices = ["add", "derived", "update", "update", "remove", "read"] if mine else ["add", "derived"]
        kind = rng.choice(choices)
        if kind == "add":
            name = f"w{worker}-{op}"
            registry.add(_record(name, worker))
            mine.append(name)
            done.append(["add", name])
        elif kind == "derived":  # pao spawn without --name: the folder's name, made unique
            chosen = registry.add(_record("shared", worker), lambda n: numbered("shared", n))
            mine.append(chosen.name)
            done.append(["add", chosen.name])
        elif kind == "update":
            name = rng.choice(mine)
            state = rng.choice(STATES)
            registry.update(name, state=state, extra={"worker": worker, "op": op})
            done.append(["update", name, state, op])
        elif kind == "remove":
            name = mine.pop(rng.randrange(len(mine)))
            registry.remove(name)
            done.append(["remove", name])
        else:
            names = registry.names()
            assert set(mine) <= names, "a reader missed one of this worker's agents"
            done.append(["read"])
    Path(journal).write_text(json.dumps(done))


def test_sixteen_processes_of_random_operations_account_for_every_one(tmp_path: Path) -> None:
    home = tmp_path / "pao"
    context = multiprocessing.get_context("spawn")
    journals = [tmp_path / f"journal-{w}.json" for w in range(WORKERS)]
    workers = [context.Process(target=_worker, args=(str(home), w, str(journals[w]))) for w in range(WORKERS)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=300)
        assert process.exitcode == 0
    # A name may be reused once freed, by any worker; lifetimes of one name never overlap.
    # So per name and worker: adds - removes is 0 or 1, and 1 for exactly the final holder.
    held: dict[str, dict[int, dict]] = {}
    total = 0
    for w, journal in enumerate(journals):
        for entry in json.loads(journal.read_text()):
            total += 1
            if entry[0] == "read":
                continue
            mine = held.setdefault(entry[1], {}).setdefault(w, {"net": 0, "state": "starting", "op": None})
            if entry[0] == "add":
                mine.update(net=mine["net"] + 1, state="starting", op=None)
            elif entry[0] == "update":
                mine.update(state=entry[2], op=entry[3])
            else:
                mine["net"] -= 1
            assert mine["net"] in (0, 1), f"worker {w} holds {entry[1]} twice"
    assert total == WORKERS * OPERATIONS
    records = {record.name: record for record in JsonRegistry(home).list()}
    for name, by_worker in held.items():
        holders = [(w, h) for w, h in by_worker.items() if h["net"] == 1]
        assert len(holders) == (1 if name in records else 0), f"{name}: held by {holders}, on disk: {name in records}"
    for name, record in records.items():
        ((w, want),) = [(w, h) for w, h in held[name].items() if h["net"] == 1]
        assert record.folder == f"/srv/w{w}"
        assert record.state == want["state"]
        assert dict(record.extra) == ({} if want["op"] is None else {"worker": w, "op": want["op"]})
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
from pao_core.models import AgentRecord
from pao_agents.registry import JsonRegistry
registry = JsonRegistry(Path(sys.argv[1]))
for n in range(100000):
    name = f"{sys.argv[2]}-{n}"
    registry.add(AgentRecord(name=name, folder="/srv", topic="t", host="fake", terminal="tmux", target=""))
    print(name, flush=True)
"""


def test_a_lock_held_by_a_killed_process_is_taken_over(tmp_path: Path) -> None:
    registry = JsonRegistry(tmp_path)
    registry.add(_record("before", 0))
    lock = tmp_path / "agents.json.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_THE_LOCK, str(lock)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout and holder.stdout.readline().strip() == "held"
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(10)
    assert lock.exists()  # left behind by the dead process; the kernel released its flock
    started = time.monotonic()
    registry.add(_record("after", 0))
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
