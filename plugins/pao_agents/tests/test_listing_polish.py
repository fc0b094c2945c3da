"""``pao list`` and the monitor show the topic (bounded, sanitised); ``pao status`` reads as words; ``pao list``
answers without tmux."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

from pao_testing.lifecycle.fixtures import RUN_PAO, Pao, pao  # noqa: F401  (fixture)
from pao_agents.registry import JsonRegistry
from pao_agents.spec import AgentRecord

HOSTILE = "fix [bold]billing[/bold] \x1b]0;owned\x07retries \u202eand then a very long tail of words that goes on"


def _add(pao: Pao, name: str, topic: str, terminal: str = "tmux", target: str = "pao-nosuch:%1") -> None:
    JsonRegistry(pao.home).add(AgentRecord(name=name, folder=str(pao.folder(name)), topic=topic, host="fake",
                                           terminal=terminal, target=target, created_at=dt.datetime.now(dt.timezone.utc)))


def test_list_and_monitor_show_the_topic_bounded_and_sanitised(pao: Pao) -> None:
    assert pao("spawn", "fix billing retries", "--folder", str(pao.folder("svc")), "--name", "svc", "--no-nudge",
               "--no-mcp")[0] == 0
    _add(pao, "odd", HOSTILE)
    code, out, err = pao("list")
    assert code == 0, err
    header, *rows = out.splitlines()
    assert header.split() == ["NAME", "STATE", "HOST", "TERMINAL", "AGE", "TOPIC", "FOLDER"]
    svc = next(row for row in rows if row.startswith("svc "))
    assert "fix billing retries" in svc
    odd = next(row for row in rows if row.startswith("odd "))
    assert "\x1b" not in odd and "\x07" not in odd and "\u202e" not in odd
    assert "fix [bold]billing[/bold] retries and th…" in odd and "tail of words" not in odd
    assert json.loads(pao("list", "--json")[1])["agents"][1]["topic"] == HOSTILE  # JSON keeps it whole
    code, out, _ = pao("monitor", "--once")
    assert out.split()[:8] == ["NAME", "MACHINE", "HOST", "STATE", "AGE", "LAST", "EVENT", "TOPIC"]
    assert "fix billing retries" in out and "\x1b" not in out and "tail of words" not in out


def test_status_is_words_not_a_python_dict(pao: Pao) -> None:
    assert pao("spawn", "fix billing retries", "--folder", str(pao.folder("svc")), "--name", "svc", "--no-nudge",
               "--no-mcp")[0] == 0
    code, out, err = pao("status", "svc")
    assert code == 0, err
    labels = [line.split()[0] for line in out.splitlines()]
    assert labels[:7] == ["name", "state", "topic", "folder", "host", "machine", "started"]
    lines = dict(line.split(None, 1) for line in out.splitlines())
    assert lines["state"] == "ready (from its screen)" and lines["topic"] == "fix billing retries"
    assert lines["host"].startswith("fake in tmux (pao-test-")
    assert "{" not in out and "'" not in out.replace("'pao diff", "")
    assert json.loads(pao("status", "svc", "--json")[1])["observed"]["state"] == "ready"


def test_list_answers_without_tmux_and_says_why_the_state_is_not_verified(pao: Pao, tmp_path: Path) -> None:
    _add(pao, "api", "fix the login bug")
    _add(pao, "mac", "tidy", terminal="terminalapp-uninstalled", target="window 1/tab 1")
    empty = tmp_path / "no-tools"
    empty.mkdir()
    env = {**os.environ, "PATH": str(empty)}  # no tmux (nor anything else) to be found
    done = subprocess.run([sys.executable, RUN_PAO, "list"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line for line in done.stdout.splitlines()[1:]}
    assert "unknown (not verified: tmux is not installed" in rows["api"]
    assert "unknown (not verified: unknown terminal 'terminalapp-uninstalled'" in rows["mac"]
    listed = subprocess.run([sys.executable, RUN_PAO, "list", "--json"], env=env, capture_output=True, text=True,
                            timeout=60)
    observed = {a["name"]: a["observed"] for a in json.loads(listed.stdout)["agents"]}
    assert observed["api"]["state"] == "unknown" and "tmux is not installed" in observed["api"]["reason"]
