"""Step 2: parallel gathering, deadlines, and failure isolation, through pao's public API."""

from __future__ import annotations

import threading
import time

import attrs
import pytest

from pao_core import MemoryItem, hookimpl
from pao_core.plugins import load_config
from pao_core.contracts import MemoryBackend
from pao_core.gather import gather
from pao_core.gather import brief
from pao_core.plugins import build_plugins


class Backend(MemoryBackend):
    def health(self, deadline: float) -> str:
        return "ok"


@attrs.frozen
class SleepyBackend(Backend):
    name: str
    delay: float
    release: threading.Event | None = None

    def search(self, query: str, limit: int, deadline: float) -> list[MemoryItem]:
        if self.release is not None:
            self.release.wait()
        time.sleep(self.delay)
        return [MemoryItem(self.name, f"{self.name}:{i}", "t", f"{query} {i}") for i in range(limit + 3)]


@attrs.frozen
class Raising(Backend):
    name: str = "raising"

    def search(self, query, limit, deadline):
        raise ConnectionRefusedError("connection refused\nby the server")


@attrs.frozen
class Garbage(Backend):
    name: str
    answer: object

    def search(self, query, limit, deadline):
        return self.answer


def test_backends_run_in_parallel_and_answer_in_rank_order() -> None:
    backends = [SleepyBackend("a", 0.2), SleepyBackend("b", 0.2), SleepyBackend("c", 0.2)]
    started = time.monotonic()
    results = gather(backends, "topic", limit=5, timeout=5)
    elapsed = time.monotonic() - started
    assert elapsed < 0.55, "three 200 ms backends must overlap, not queue"
    for name in "abc":
        assert results[name].status == "ok"
        assert [item.rank for item in results[name].items] == [1, 2, 3, 4, 5]
        assert all(item.backend == name for item in results[name].items)
        assert 150 < results[name].elapsed_ms < 550


def test_a_hung_backend_costs_its_deadline_and_no_more() -> None:
    hang = threading.Event()
    started = time.monotonic()
    results = gather([SleepyBackend("hung", 0, release=hang), SleepyBackend("quick", 0.01)], "t",
                     limit=3, timeout=0.3)
    elapsed = time.monotonic() - started
    hang.set()
    assert results["hung"].status == "timeout"
    assert "0.30 s" in results["hung"].error
    assert results["quick"].status == "ok" and results["quick"].count == 3
    assert 0.29 <= elapsed < 1.0


def test_per_backend_timeouts_override_the_default() -> None:
    results = gather([SleepyBackend("slow", 0.4)], "t", limit=1, timeout=0.1, timeouts={"slow": 2})
    assert results["slow"].status == "ok"


@pytest.mark.parametrize(
    ("backend", "fragment"),
    [
        (Raising(), "connection refused by the server"),
        (Garbage("g1", None), "NoneType"),
        (Garbage("g2", "a string"), "str"),
        (Garbage("g3", {"items": []}), "dict"),
        (Garbage("g4", [MemoryItem("x", "1", "t", "ok"), 42]), "int at position 2"),
    ],
)
def test_raising_or_garbage_becomes_an_error_result(backend, fragment) -> None:
    results = gather([backend, SleepyBackend("fine", 0)], "t", limit=2, timeout=1)
    failed = results[backend.name]
    assert failed.status == "error"
    assert fragment in failed.error
    assert "\n" not in failed.error
    assert results["fine"].status == "ok"


def test_two_backends_with_one_name_are_reported() -> None:
    results = gather([SleepyBackend("same", 0), SleepyBackend("same", 0)], "t", limit=1, timeout=1)
    assert results["same"].status == "error"
    assert "share this name" in results["same"].error


def test_brief_returns_items_of_the_backends_that_answered() -> None:
    plugins = build_plugins({"PAO_LOAD_PLUGINS": ""})
    briefing = brief("deploy the api", config=load_config(), plugins=plugins,
                     backends=[SleepyBackend("longterm", 0), Raising()])
    assert briefing.backends["raising"].status == "error"
    assert briefing.backends["longterm"].status == "ok"
    assert any(item.backend == "longterm" for item in briefing.items)


@attrs.define
class Closing(Backend):
    """A backend that counts its close steps; ``broken``: its close fails."""

    name: str
    broken: bool = False
    closed: int = 0

    def search(self, query, limit, deadline):
        return [MemoryItem(self.name, f"{self.name}:0", "t", query)]

    def close(self) -> None:
        self.closed += 1
        if self.broken:
            raise OSError("the pool was gone already")

    @hookimpl
    def pao_memory_backends(self, config):
        return [self]


def test_brief_closes_the_backends_it_made_and_leaves_the_callers_open() -> None:
    made, broken = Closing("made"), Closing("broken", broken=True)
    plugins = build_plugins({"PAO_LOAD_PLUGINS": ""})
    plugins.manager.register(made, name="made")
    plugins.manager.register(broken, name="broken")
    briefing = brief("deploy the api", config=load_config(), plugins=plugins)
    assert {name: result.status for name, result in briefing.backends.items()} == {"made": "ok", "broken": "ok"}
    assert (made.closed, broken.closed) == (1, 1)  # a failing close skips nothing, and the briefing stands

    passed = Closing("passed")
    brief("deploy the api", config=load_config(), plugins=plugins, backends=[passed])
    assert passed.closed == 0  # the caller's to close (pao eval closes its backends once, at its end)
