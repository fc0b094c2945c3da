"""A registry workload for many processes at once, journaled so that a test can account for every operation.

``python -m pao_testing.registry_workload WORKER OPERATIONS JOURNAL [MIX]`` runs in a process of its
own with the registry that ``pao`` would use there (``PAO_HOME``, ``PAO_CONFIG``: this
machine's ``[machine] name`` and ``[registry] url``). Each operation is journaled twice, a
``try`` line before it and a ``done`` line after it, so that an operation interrupted by a
registry that went away is known. A registry error ends the process as ``pao`` does: one
line on stderr, exit 1.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any, Iterable, Mapping

import attrs

from pao_agents.spec import RegistryStore
from pao_core.errors import PaoError
from pao_agents.spec import DuplicateAgent
from pao_agents.spec import AgentRecord
from pao_agents.names import numbered

STATES = ("starting", "ready", "busy", "waiting", "blocked", "paused", "dead")
COUNTER = "counter"
"""One record every worker increments (``extra["count"]``): a lost update shows as a short count."""


def record(name: str, worker: int) -> AgentRecord:
    return AgentRecord(name=name, folder=f"/srv/w{worker}", topic="t", host="fake", terminal="tmux", target="")


MIXES = {
    "own": (),
    "derived": ("derived",),
    "all": ("derived", "race", "count"),
}
"""Operations on names other workers use too, besides each worker's own adds, updates, removals and reads:
derived names (``shared``, ``shared-2``...), adds of one name raced for, increments of the counter."""


def operate(registry: RegistryStore, worker: int, operations: int, journal: Path, *, mix: str = "all") -> None:
    """Random named and derived adds, contended adds of one name, updates, increments, removals and reads."""
    rng = random.Random(worker)
    mine: list[str] = []
    state = ""
    with journal.open("a", encoding="utf-8") as out:

        def note(**entry: Any) -> None:
            out.write(json.dumps(entry) + "\n")
            out.flush()

        for op in range(operations):
            kinds = ["add", "update", "update", "remove", "read"] if mine else ["add"]
            kinds += MIXES[mix]
            kind = rng.choice(kinds)
            if kind == "add":
                name = f"w{worker}-{op}"
                note(kind="add", name=name, op=op, phase="try")
                registry.add(record(name, worker))
                mine.append(name)
            elif kind == "derived":  # pao spawn without --name: the folder's name, made unique
                note(kind="derived", op=op, phase="try")
                name = registry.add(record("shared", worker), lambda n: numbered("shared", n)).name
                mine.append(name)
            elif kind == "race":  # every worker tries the same few names; one of them gets each
                name = f"race-{op // 10}"
                note(kind="race", name=name, op=op, phase="try")
                try:
                    registry.add(record(name, worker))
                except DuplicateAgent:
                    name = ""
            elif kind == "update":
                name, state = rng.choice(mine), rng.choice(STATES)
                note(kind="update", name=name, state=state, op=op, phase="try")
                registry.update(name, state=state, extra={"worker": worker, "op": op})
            elif kind == "count":
                name = COUNTER
                note(kind="count", op=op, phase="try")
                registry.change(COUNTER, lambda r: r.changed(extra={"count": r.extra.get("count", 0) + 1}))
            elif kind == "remove":
                name = mine.pop(rng.randrange(len(mine)))
                note(kind="remove", name=name, op=op, phase="try")
                registry.remove(name)
            else:
                name = ""
                note(kind="read", op=op, phase="try")
                missing = set(mine) - registry.names()
                assert not missing, f"a reader missed agents of this worker: {sorted(missing)}"
            note(kind=kind, name=name, op=op, phase="done", state=state if kind == "update" else None)


@attrs.define
class Expected:
    """What the journals say the registry must hold."""

    held: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    """Each agent name held at the end: its worker, and the state and op of its worker's last update."""
    count: int = 0
    operations: int = 0
    race_winners: dict[str, list[int]] = attrs.field(factory=dict)


def replay(journals: Iterable[tuple[int, list[dict[str, Any]]]]) -> Expected:
    """The registry that the finished operations (``done`` lines) of every worker must leave.

    A name may be reused once freed, by any worker, and lifetimes of one name never
    overlap: so per name and worker, adds - removes is 0 or 1, and 1 for exactly the
    final holder.
    """
    expected = Expected()
    by_name: dict[str, dict[int, dict[str, Any]]] = {}
    for worker, entries in journals:
        for entry in entries:
            if entry["phase"] != "done":
                continue
            expected.operations += 1
            kind, name = entry["kind"], entry.get("name", "")  # a "try" line of a read or a count has none
            if kind == "race":
                if name:
                    expected.race_winners.setdefault(name, []).append(worker)
                continue
            if kind == "count":
                expected.count += 1
            if kind not in ("add", "derived", "update", "remove"):
                continue
            mine = by_name.setdefault(name, {}).setdefault(worker, {"net": 0, "state": "starting", "op": None})
            if kind in ("add", "derived"):
                mine.update(net=mine["net"] + 1, state="starting", op=None)
            elif kind == "update":
                mine.update(state=entry["state"], op=entry["op"])
            else:
                mine["net"] -= 1
            assert mine["net"] in (0, 1), f"worker {worker} holds {name} twice"
    for name, workers in by_name.items():
        holders = [(worker, mine) for worker, mine in workers.items() if mine["net"] == 1]
        assert len(holders) <= 1, f"{name} held by workers {[w for w, _ in holders]} at once"
        if holders:
            worker, mine = holders[0]
            expected.held[name] = {"worker": worker, "state": mine["state"], "op": mine["op"]}
    return expected


def assert_holds(records: list[AgentRecord], expected: Expected, machines: Mapping[int, str]) -> None:
    """The registry holds exactly what the journals say: nothing lost, nothing duplicated, no stale field."""
    stored = {record.name: record for record in records}
    assert len(stored) == len(records), "a name is stored twice"
    races = {name for name in stored if name.startswith("race-")}
    assert races == set(expected.race_winners), "a contended name was lost or never won"
    for name, winners in expected.race_winners.items():
        assert len(winners) == 1, f"{name} was added by workers {winners}: two machines registered one name"
        assert stored[name].folder == f"/srv/w{winners[0]}" and stored[name].machine == machines[winners[0]]
    counter = stored.pop(COUNTER, None)
    if counter is not None:
        assert counter.extra.get("count", 0) == expected.count, "an increment was lost"
    agents = {name: record for name, record in stored.items() if name not in races}
    assert set(agents) == set(expected.held), (
        f"lost: {sorted(set(expected.held) - set(agents))}, unexpected: {sorted(set(agents) - set(expected.held))}")
    for name, want in expected.held.items():
        got, worker = agents[name], want["worker"]
        assert (got.folder, got.machine, got.state) == (f"/srv/w{worker}", machines[worker], want["state"]), name
        assert dict(got.extra) == ({} if want["op"] is None else {"worker": worker, "op": want["op"]}), name


def read_journal(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def main(argv: list[str]) -> int:
    from pao_core.plugins import load_config  # the worker process only: a test importing the helpers loads no registry
    from pao_agents.registry import open_registry  # the worker process only, as the line above

    worker, operations, journal = int(argv[0]), int(argv[1]), Path(argv[2])
    try:
        operate(open_registry(load_config()), worker, operations, journal, mix=argv[3] if len(argv) > 3 else "all")
    except PaoError as exc:
        print(f"pao: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
