"""``pao spawn`` overlaps what does not depend on each other, and the agent still starts last.

The window opens before the briefing is gathered, but its agent starts only once the
briefing and the context file are written (the launcher waits at a gate). The briefing is
gathered in a forked child while the host, terminal and registry are checked; a child
that fails costs nothing but time: the briefing is then gathered in pao's own process.
Real tmux, the fake agent, a memory backend of the test's own.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator, Sequence

import attrs
import psutil
import pytest

from lifecycle_support.fixtures import Pao, pao  # noqa: F401  (fixture)
from pao_core.contracts import MemoryBackend
from pao_core.hookspecs import hookimpl
from pao_core.models import MemoryItem
from pao_core.plugins import get_plugins

TEST_PROCESS = os.getpid()


@attrs.define
class WhereBackend(MemoryBackend):
    """Says which process searched it; ``die_in_child`` ends a forked child mid-search."""

    name: str = "where"
    die_in_child: bool = False

    def search(self, query: str, limit: int, deadline: float) -> Sequence[MemoryItem]:
        if self.die_in_child and os.getpid() != TEST_PROCESS:
            os._exit(3)
        text = f"the login bug was searched by process {os.getpid()}"
        return [MemoryItem("where", "w1", "login bug", text, kind="note", score=1.0)]

    def health(self, deadline: float) -> str:
        return "ok"


class WherePlugin:
    def __init__(self, backend: WhereBackend) -> None:
        self.backend = backend

    @hookimpl
    def pao_memory_backends(self, config: object) -> list[WhereBackend]:
        return [self.backend]


@pytest.fixture
def where(pao: Pao, request: pytest.FixtureRequest) -> Iterator[WhereBackend]:  # noqa: F811
    backend = WhereBackend(die_in_child=getattr(request, "param", False))
    plugin = WherePlugin(backend)
    get_plugins().manager.register(plugin, name="where")
    try:
        yield backend
    finally:
        get_plugins().manager.unregister(plugin)


def spawn(pao: Pao, folder: Path, *extra: str) -> tuple[dict, str]:  # noqa: F811
    code, out, err = pao("spawn", "fix the login bug", "--folder", str(folder), "--no-nudge", "--json", *extra)
    assert code == 0, err
    return json.loads(out), err


def searched_by(briefing: str) -> int:
    line = next(line for line in briefing.splitlines() if "searched by process" in line)
    return int(line.split("searched by process ")[1].split()[0].strip(".,;)"))


def test_the_window_opens_first_and_its_agent_starts_after_its_files(
    pao: Pao, where: WhereBackend, monkeypatch: pytest.MonkeyPatch, private_tmp: Path  # noqa: F811
) -> None:
    folder = pao.folder("api")
    stamps = pao.workdir / "stamps.json"
    monkeypatch.setenv("FAKE_AGENT_STAMPS", str(stamps))

    record, err = spawn(pao, folder)

    steps = [step["step"] for step in record["steps"]]
    assert steps.index("1 window") < steps.index("2-3 gather+compose") < steps.index("6 spawn")
    started = json.loads(stamps.read_text())["start"]  # the agent's first line of code
    for written in (folder / "CONTEXT_BRIEFING.md", folder / "AGENTS.md"):
        assert started >= written.stat().st_mtime, f"the agent started before {written.name} was written"
    assert record["state"] == "ready" and "pao: 6 spawn" in err
    assert list(private_tmp.iterdir()) == [], "the launch files or the gate's folder were left behind"


def test_the_briefing_is_gathered_in_a_child_process(pao: Pao, where: WhereBackend) -> None:  # noqa: F811
    folder = pao.folder("api")

    spawn(pao, folder)

    gatherer = searched_by((folder / "CONTEXT_BRIEFING.md").read_text())
    assert gatherer != TEST_PROCESS
    assert not psutil.Process().children(), "the child was not reaped"


@pytest.mark.parametrize("where", [True], indirect=True)
def test_a_child_that_dies_costs_only_time(pao: Pao, where: WhereBackend) -> None:  # noqa: F811
    folder = pao.folder("api")

    record, _ = spawn(pao, folder)

    assert searched_by((folder / "CONTEXT_BRIEFING.md").read_text()) == TEST_PROCESS
    assert record["state"] == "ready"
    assert not psutil.Process().children()


def test_a_spawn_refused_after_the_child_started_leaves_no_process(pao: Pao, where: WhereBackend) -> None:  # noqa: F811
    folder = pao.folder("api")

    code, _, err = pao("spawn", "fix the login bug", "--folder", str(folder), "--host", "no-such-host")

    assert code != 0 and "no-such-host" in err
    assert not psutil.Process().children()
    assert not list(folder.iterdir()), "a refused spawn wrote into the folder"
