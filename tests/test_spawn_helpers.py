"""``pao spawn`` as a user runs it forks its briefing's helper before it reads its configuration.

The console script with the fake host and a probe plugin installed as distributions (so
that it starts from the plugin index, as after any first run): the helper warms up and
gathers the briefing with numpy loaded (not when the stores search without the model); pao's own
process does not load numpy. A helper
that dies costs only time, and a refused spawn leaves no helper behind. Real tmux, the
fake agent, the real longterm store with semantic search.
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

import psutil
import pytest

import pao_testing

SUPPORT = Path(pao_testing.__file__).resolve().parents[1]  # the folder that holds pao_testing
TOPIC = "fix the login bug"


class Console:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.socket = f"pao-test-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.probe = root / "probe.jsonl"
        site = root / "site" / "pao_probe-0.dist-info"
        site.mkdir(parents=True)
        (site / "METADATA").write_text("Metadata-Version: 2.1\nName: pao-probe\nVersion: 0\n")
        (site / "entry_points.txt").write_text(
            "[pao]\nfake-host = pao_testing.lifecycle.fake_host:PLUGIN\nprobe = pao_testing.lifecycle.probe_plugin:PLUGIN\n")
        (root / "home").mkdir()
        (root / "config.toml").write_text('[spawn]\nhost = "fake"\nready_timeout = 20.0\n')
        env = {key: value for key, value in os.environ.items() if not key.startswith(("FAKE_AGENT_", "PAO_", "PROBE_"))}
        self.env = {**env, "PAO_HOME": str(root / "pao-home"), "HOME": str(root / "home"), "PAO_TMUX_SOCKET": self.socket,
                    "PAO_CONFIG": str(root / "config.toml"), "PROBE_OUT": str(self.probe),
                    "PYTHONPATH": os.pathsep.join([str(SUPPORT), str(root / "site")])}
        script = Path(sys.executable).with_name("pao")
        self.pao = [str(script)] if script.exists() else [sys.executable, "-m", "pao_core"]

    def __call__(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.pao, *args], env={**self.env, **env}, capture_output=True, text=True, timeout=120)

    def events(self, kind: str) -> list[dict]:
        lines = self.probe.read_text().splitlines() if self.probe.exists() else []
        return [event for event in map(json.loads, lines) if event["event"] == kind]

    def spawn(self, folder: Path, *extra: str, **env: str) -> subprocess.CompletedProcess[str]:
        self.probe.unlink(missing_ok=True)
        return self("spawn", TOPIC, "--folder", str(folder), "--no-nudge", "--json", *extra, **env)


@pytest.fixture
def console(tmp_path: Path) -> Iterator[Console]:
    runner = Console(tmp_path)
    memory = tmp_path / "memory.jsonl"
    memory.write_text(json.dumps({"type": "entity", "name": "Login", "entityType": "Bug", "observations": [
        "The login bug comes back whenever the session cookie loses its SameSite attribute."]}) + "\n")
    try:
        imported = runner("memory", "import", str(memory))  # the first run loads every plugin and writes the index
        assert imported.returncode == 0, imported.stderr
        yield runner
    finally:
        subprocess.run(["tmux", "-L", runner.socket, "kill-server"], capture_output=True, check=False)


def helpers_of(topic: str) -> list[psutil.Process]:
    """Processes still running a ``pao spawn`` of ``topic`` (pao and its helpers share its command line)."""
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        cmdline = process.info["cmdline"] or []
        if "spawn" in cmdline and topic in cmdline and process.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(process)
    return found


@pytest.mark.hook("pao_warm_up")
def test_the_briefing_is_prepared_and_gathered_in_a_helper(console: Console, tmp_path: Path) -> None:
    folder = tmp_path / "api"
    folder.mkdir()
    stamps = tmp_path / "stamps.json"

    done = console.spawn(folder, FAKE_AGENT_STAMPS=str(stamps))

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["state"] == "ready"
    warmed = {event["purpose"]: event["pid"] for event in console.events("warm_up")}
    (spawned,) = console.events("spawned")
    (searched,) = console.events("searched")
    assert list(warmed) == ["briefing"] and warmed["briefing"] != spawned["pid"]
    assert searched["pid"] == warmed["briefing"], "the briefing was gathered by its helper"
    assert searched["modules"] == ["numpy"], "the helper did not warm up the model its stores search with"
    assert spawned["modules"] == [], "pao's own process imported numpy, or libtmux to read the agent's screen"
    briefing = next(folder.glob("*BRIEFING*"))
    assert "SameSite" in briefing.read_text() and "session cookie" in briefing.read_text()
    assert json.loads(stamps.read_text())["start"] >= briefing.stat().st_mtime, "the agent started before its briefing"
    assert helpers_of(TOPIC) == []


def test_stores_without_semantic_search_warm_up_no_model(console: Console, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(config.read_text() + "[backends.history]\nsemantic = false\n[backends.longterm]\nsemantic = false\n")
    folder = tmp_path / "api"
    folder.mkdir()

    done = console.spawn(folder)

    assert done.returncode == 0, done.stderr
    (searched,) = console.events("searched")
    assert [event["pid"] for event in console.events("warm_up")] == [searched["pid"]]
    assert searched["modules"] == [], "the helper loaded numpy and the model for stores that search without them"
    assert "session cookie" in next(folder.glob("*BRIEFING*")).read_text()


def test_helpers_that_die_cost_only_time(console: Console, tmp_path: Path) -> None:
    folder = tmp_path / "api"
    folder.mkdir()

    done = console.spawn(folder, PROBE_DIE_IN="briefing")

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["state"] == "ready"
    (spawned,) = console.events("spawned")
    (searched,) = console.events("searched")
    warmed = {event["pid"] for event in console.events("warm_up")}
    assert len(warmed) == 1 and searched["pid"] not in warmed, "a helper that ended still answered"
    assert "session cookie" in next(folder.glob("*BRIEFING*")).read_text()


def test_a_refused_spawn_leaves_no_helper(console: Console, tmp_path: Path) -> None:
    folder = tmp_path / "api"
    folder.mkdir()

    done = console.spawn(folder, "--host", "no-such-host")

    assert done.returncode != 0
    assert done.stderr.strip().splitlines() == [line for line in done.stderr.strip().splitlines() if "no-such-host" in line]
    assert helpers_of(TOPIC) == [] and not list(folder.iterdir())
    windows = subprocess.run(["tmux", "-L", console.socket, "list-windows", "-a"], capture_output=True, check=False)
    assert windows.returncode != 0, "a window was opened for a refused spawn"


def test_a_usage_error_leaves_no_helper_behind(console: Console) -> None:
    done = console("spawn", "--no-such-option", TOPIC)

    assert done.returncode == 2 and "--no-such-option" in done.stderr
    give_up = time.monotonic() + 30  # the helper ends once pao is gone (its order pipe closes)
    while helpers_of(TOPIC) and time.monotonic() < give_up:
        time.sleep(0.05)
    assert helpers_of(TOPIC) == []


def test_help_starts_no_helper(console: Console) -> None:
    done = console("spawn", "--help")

    assert done.returncode == 0 and "TOPIC" in done.stdout
    time.sleep(0.2)
    assert console.events("warm_up") == []
