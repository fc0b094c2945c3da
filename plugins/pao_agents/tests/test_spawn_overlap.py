"""``pao spawn`` overlaps what does not depend on each other, and the agent still starts last.

The window opens before the briefing is gathered, but its agent starts only once the
briefing and the context file are written (the launcher waits at a gate). The briefing is
gathered in a forked child while the host, terminal and registry are checked; a child
that fails costs nothing but time: the briefing is then gathered in pao's own process.
Real tmux, the fake agent, a memory backend of the test's own.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator, Sequence

import attrs
import psutil
import pytest

from pao_testing.lifecycle.fixtures import Pao, pao  # noqa: F401  (fixture)
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


def children() -> set[int]:
    return {child.pid for child in psutil.Process().children()}


def test_the_briefing_is_gathered_in_a_child_process(pao: Pao, where: WhereBackend) -> None:  # noqa: F811
    folder = pao.folder("api")
    before = children()

    spawn(pao, folder)

    gatherer = searched_by((folder / "CONTEXT_BRIEFING.md").read_text())
    assert gatherer != TEST_PROCESS
    assert gatherer not in children() and children() <= before, "the child was not reaped"


@pytest.mark.parametrize("where", [True], indirect=True)
def test_a_child_that_dies_costs_only_time(pao: Pao, where: WhereBackend) -> None:  # noqa: F811
    folder = pao.folder("api")
    before = children()

    record, _ = spawn(pao, folder)

    assert searched_by((folder / "CONTEXT_BRIEFING.md").read_text()) == TEST_PROCESS
    assert record["state"] == "ready"
    assert children() <= before


def test_a_spawn_refused_after_the_child_started_leaves_no_process(pao: Pao, where: WhereBackend) -> None:  # noqa: F811
    folder = pao.folder("api")
    before = children()

    code, _, err = pao("spawn", "fix the login bug", "--folder", str(folder), "--host", "no-such-host")

    assert code != 0 and "no-such-host" in err
    assert children() <= before
    assert not list(folder.iterdir()), "a refused spawn wrote into the folder"


MODULES_PROBE = """
import json, os, sys
sys.path.insert(0, os.environ["PROBE_TESTS"])
from pao_testing.lifecycle.fake_host import FakeHostPlugin
from pao_core.cli import main
from pao_core.hookspecs import hookimpl
from pao_core.plugins import get_plugins

class Modules:
    @hookimpl
    def pao_agent_spawned(self, record):
        with open(os.environ["PROBE_OUT"], "w") as out:
            json.dump(sorted(name for name in sys.modules if name.split(".")[0] == "numpy"), out)

get_plugins().manager.register(FakeHostPlugin(), name="fake-host")
get_plugins().manager.register(Modules(), name="modules")
code = main(sys.argv[1:])
if sys.argv[1] == "brief":  # the same search in one process: numpy is loaded for the vectors
    json.dump(sorted(name for name in sys.modules if name.split(".")[0] == "numpy"), open(os.environ["PROBE_OUT"], "w"))
sys.exit(code)
"""


def test_semantic_search_runs_outside_the_spawning_process(tmp_path: Path) -> None:
    """Design guard: numpy and the model load in the gathering child, never in the process that opens the window."""
    memory = tmp_path / "memory.jsonl"
    memory.write_text(json.dumps({"type": "entity", "name": "TestFlight", "entityType": "Service", "observations": [
        "TestFlight builds expire after 90 days, so Sam uploads a fresh beta every two months."]}) + "\n")
    (tmp_path / "config.toml").write_text('[spawn]\nhost = "fake"\n')
    socket = f"pao-test-{os.getpid()}-modules"
    env = {**os.environ, "PAO_HOME": str(tmp_path / "home"), "HOME": str(tmp_path), "PAO_TMUX_SOCKET": socket,
           "PAO_CONFIG": str(tmp_path / "config.toml"), "PROBE_TESTS": str(Path(__file__).parent),
           "PROBE_OUT": str(tmp_path / "modules.json")}
    folder = tmp_path / "app"
    folder.mkdir()
    run = functools.partial(subprocess.run, capture_output=True, text=True, env=env, timeout=120)
    try:
        assert run([sys.executable, "-m", "pao_core", "memory", "import", str(memory)]).returncode == 0
        topic = "when do the TestFlight beta builds expire"
        briefed = run([sys.executable, "-c", MODULES_PROBE, "brief", topic])
        assert briefed.returncode == 0 and "90 days" in briefed.stdout, briefed.stderr
        assert json.loads((tmp_path / "modules.json").read_text()), "the store's vectors were not searched"
        spawned = run([sys.executable, "-c", MODULES_PROBE, "spawn", topic, "--folder", str(folder), "--no-nudge"])
        assert spawned.returncode == 0, spawned.stderr
        assert "90 days" in (folder / "CONTEXT_BRIEFING.md").read_text()
        assert json.loads((tmp_path / "modules.json").read_text()) == []
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)


def test_a_helper_inherited_by_a_later_child_can_be_given_up_there() -> None:
    """A child forked after a helper inherits it (pao brief's vector helper, in a child of pao brief): when it gives
    that helper up (too late), it ends a process that is not its child, and still does the work itself."""
    import time

    from pao_agents import forked

    busy = forked.helper(functools.partial(time.sleep, 30))  # still preparing past any deadline
    assert busy is not None

    def give_up() -> str:
        sent = busy.run(functools.partial(str, "done"))
        assert sent is not None
        return sent.result(0.05)  # late: done here instead, and the helper is ended

    pid = busy.pid
    try:
        assert forked.start(give_up).result(30) == "done"
        give_up_at = time.monotonic() + 10  # SIGKILL lands at once; a loaded machine may take a moment to show it
        while psutil.Process(pid).status() != psutil.STATUS_ZOMBIE and time.monotonic() < give_up_at:
            time.sleep(0.01)
        assert psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, "the late helper still runs"
    finally:
        busy.cancel()  # reaped here, by its parent
    assert not psutil.pid_exists(pid)


def test_a_helper_ended_from_two_threads_is_gone_when_either_returns(monkeypatch) -> None:
    """A search's thread that gives the vector helper up and pao's exit (``ahead.end``) may end it at once: the one
    that comes second must not return before the helper is ended, else the exit freezes the first thread midway
    and leaves the helper running (a stopped one held ``pao brief``'s output open)."""
    import threading
    import time

    from pao_agents import forked

    busy = forked.helper(functools.partial(time.sleep, 30))
    assert busy is not None
    pid = busy.pid
    inside, go_on = threading.Event(), threading.Event()
    real_end = forked._end

    def slow_end(*args: object) -> None:
        inside.set()
        go_on.wait(30)
        real_end(*args)

    monkeypatch.setattr(forked, "_end", slow_end)
    seen: list[bool] = []

    def second() -> None:
        busy.cancel()
        seen.append(psutil.pid_exists(pid))

    first = threading.Thread(target=busy.cancel)
    first.start()
    try:
        assert inside.wait(30)
        later = threading.Thread(target=second)
        later.start()
        later.join(0.2)  # broken, the second returns here at once, the helper still running
    finally:
        go_on.set()
        first.join(30)
    later.join(30)
    assert seen == [False], "the second cancel returned before the helper was ended"
