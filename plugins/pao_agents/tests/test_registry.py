"""The agent registry: API, one-line errors, stale locks, and many writers at once."""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from pathlib import Path

import pytest

from pao_core.errors import PaoError
from pao_core.files import lock_is_held
from pao_agents.spec import UnreadableJSON
from pao_agents.spec import AgentRecord
from pao_agents.registry import DuplicateAgent, JsonRegistry, UnknownAgent


def _record(name: str, **changes: object) -> AgentRecord:
    return AgentRecord(name=name, folder="/tmp", topic="t", host="fake", terminal="tmux", target="", **changes)


def test_add_get_update_remove_list(tmp_path: Path) -> None:
    registry = JsonRegistry(tmp_path / "home")
    assert registry.list() == [] and registry.find("a") is None
    registry.add(_record("a"))
    registry.add(_record("b", pid=42))
    assert registry.get("b").pid == 42
    before = registry.get("a").updated_at
    updated = registry.update("a", state="ready", target="pao:%1", session_id="s-1", extra={"k": "v"})
    assert (updated.state, updated.target, updated.session_id, dict(updated.extra)) == ("ready", "pao:%1", "s-1", {"k": "v"})
    assert updated.updated_at > before
    assert registry.get("a") == updated  # round trip through JSON keeps every field
    assert [r.name for r in registry.list()] == ["a", "b"]
    assert registry.remove("a").name == "a"
    assert registry.names() == {"b"}
    document = json.loads((tmp_path / "home" / "agents.json").read_text())
    assert document["version"] == 1 and list(document["agents"]) == ["b"]
    assert not lock_is_held(tmp_path / "home" / "agents.json.lock")


def test_errors_are_one_line(tmp_path: Path) -> None:
    registry = JsonRegistry(tmp_path)
    registry.add(_record("a"))
    with pytest.raises(DuplicateAgent, match=r"^an agent named 'a' already exists"):
        registry.add(_record("a"))
    for action in (lambda: registry.get("x"), lambda: registry.update("x", state="dead"), lambda: registry.remove("x")):
        with pytest.raises(UnknownAgent, match=r"^no agent named 'x' \(see 'pao list'\)$"):
            action()


def test_add_unique_takes_the_next_free_name(tmp_path: Path) -> None:
    registry = JsonRegistry(tmp_path)
    for _ in range(3):
        registry.add(_record("api"), lambda n: "api" if n == 1 else f"api-{n}")
    assert registry.names() == {"api", "api-2", "api-3"}


def test_unreadable_registry_is_never_overwritten(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "agents.json"
    path.write_text("{not json")
    registry = JsonRegistry(tmp_path)
    with pytest.raises(UnreadableJSON, match="not valid JSON"):
        registry.list()
    with pytest.raises(UnreadableJSON, match="pao will not overwrite it"):
        registry.add(_record("a"))
    assert path.read_text() == "{not json"
    path.write_text(json.dumps({"agents": {"a": {"name": "a"}}}))
    assert registry.list() == []  # reported and skipped: one bad record hides no other agent
    assert "agent 'a' has an unreadable record" in capsys.readouterr().err
    with pytest.raises(PaoError, match="agent 'a' has an unreadable record"):
        registry.get("a")


@pytest.mark.parametrize("owner", ["dead", "reused"])
def test_a_lock_file_naming_any_pid_does_not_block(tmp_path: Path, owner: str) -> None:
    """A pid in a lock file (the old format) means nothing now: dead, or reused by a live process after a reboot."""
    registry = JsonRegistry(tmp_path)
    registry.add(_record("a"))
    dead = multiprocessing.get_context("spawn").Process(target=time.sleep, args=(0,))
    dead.start()
    dead.join()
    pid = dead.pid if owner == "dead" else os.getppid()  # a live process that is not pao
    lock = tmp_path / "agents.json.lock"
    lock.write_text(json.dumps({"pid": pid, "host": os.uname().nodename, "time": time.time() - 60}))
    started = time.monotonic()
    registry.add(_record("b"))
    assert time.monotonic() - started < 2
    assert registry.names() == {"a", "b"}
    assert not lock_is_held(lock)


def _hammer(home: str, worker: int, count: int) -> None:
    registry = JsonRegistry(Path(home))
    for i in range(count):
        registry.add(_record(f"w{worker}-{i}"))
        registry.update(f"w{worker}-{i}", state="ready")
        if i % 2:
            registry.remove(f"w{worker}-{i}")


def test_many_processes_at_once_never_lose_an_agent(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_hammer, args=(str(tmp_path), w, 12)) for w in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=120)
        assert process.exitcode == 0
    records = JsonRegistry(tmp_path).list()
    assert sorted(r.name for r in records) == sorted(f"w{w}-{i}" for w in range(4) for i in range(0, 12, 2))
    assert {r.state for r in records} == {"ready"}
