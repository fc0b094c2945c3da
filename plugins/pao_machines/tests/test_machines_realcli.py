"""Two machines, the real Claude Code CLI on the second: spawn there with a briefing built here, list,
send, status, broadcast, checkpoint, pause, resume, kill, and the machine's sshd stopped mid-run.

The second machine is a loopback sshd and an account of its own (``pao_testing.sshd``),
its own HOME, PAO_HOME, tmux server and ``~/.claude.json``; its CLI talks to this test's
loopback Messages stub. This side's only memory is ``$HOME/notes.md`` (pao-notes).
"""

from __future__ import annotations

import json
import os
import time
import uuid

import pytest

from pao_machines.words import decode

from pao_testing.anthropic_stub import AnthropicStub

from pao_testing.two_machines import Box

pytestmark = pytest.mark.realcli


def _conversation_with(stub: AnthropicStub, text: str, timeout: float = 90.0):
    found = stub.wait_for_message(text, timeout=timeout, where=lambda request: request.is_conversation)
    assert found is not None, f"no conversation request carried {text!r}; {len(stub.requests)} requests"
    return found


def _agents(box: Box) -> dict[str, dict]:
    return {agent["name"]: agent for agent in json.loads(box.pao("list", "--json").stdout)["agents"]}


def _logged_pao(box: Box) -> None:
    """The remote pao behind a wrapper under the remote HOME that logs its arguments (``~/`` in the config)."""
    box.remote_script("bin/pao", f'#!/bin/sh\nprintf "%s\\n" "$@" >> "$HOME/pao-argv.log"\n'
                                 f'exec {box.runtime.python} -m pao_core "$@"\n')
    box.use_remote_pao("~/bin/pao")


def _logged_words(box: Box) -> list[list[str]]:
    """Each remote pao's command line from the wrapper's log, the encoded ones (``machine run -- WORDS``) decoded."""
    lines = (box.sshd.home / "pao-argv.log").read_text().splitlines()
    return [decode(lines[at + 3]) for at in range(len(lines)) if lines[at:at + 3] == ["machine", "run", "--"]]


def test_an_agent_on_another_machine_starts_knowing_what_this_machine_knows(
    claude_box: Box, anthropic_stub: AnthropicStub
) -> None:
    box = claude_box
    _logged_pao(box)
    marker, said = f"WIDGET-{uuid.uuid4().hex[:8]}", f"SEND-{uuid.uuid4().hex[:8]}"
    token = "ghp_" + uuid.uuid4().hex + "0123"  # a GitHub token's shape: redacted before it leaves this machine
    (box.local / "home" / "notes.md").write_text(f"- The widget counter lives in the {marker} module; token {token}\n")
    folder = box.remote_folder("shop")

    spawned = json.loads(box.pao("spawn", "count the widgets", "--on", "box", "--folder", "~/shop", "--json").stdout)
    assert spawned["name"] == "count-widgets"  # named from the topic, as a local spawn
    assert spawned["machine"] == "box" and spawned["state"] == "busy"
    assert spawned["folder"] == str(folder)
    assert marker in _conversation_with(anthropic_stub, "count the widgets").text()

    # the briefing went on stdin: the remote pao's arguments carry the topic, never the memory
    spawn_words = _logged_words(box)[0]
    assert spawn_words[:2] == ["spawn", "--folder=~/shop"] and "--name=count-widgets" in spawn_words
    assert spawn_words[-2:] == ["--", "count the widgets"]
    assert marker not in (box.sshd.home / "pao-argv.log").read_text() and marker not in str(spawn_words)
    # the session channel, trust and the agent's files are the remote user's own
    agent_dir = box.sshd.home / ".local" / "share" / "pao" / "agents" / "count-widgets"
    assert agent_dir.stat().st_uid == box.sshd.account.uid and agent_dir.stat().st_mode & 0o777 == 0o700
    assert marker in (agent_dir / "briefing.md").read_text() and token not in (agent_dir / "briefing.md").read_text()
    assert all(token not in request.text() for request in anthropic_stub.messages())
    trusted = json.loads((box.sshd.home / ".claude.json").read_text())["projects"][str(folder)]
    assert trusted["hasTrustDialogAccepted"] is True
    assert not (box.local / "pao" / "agents").exists(), "nothing of the agent's is kept on this machine"
    assert os.listdir(folder) == [], "the remote folder stays untouched"

    agents = _agents(box)
    assert agents["count-widgets"]["machine"] == "box"
    assert agents["count-widgets"]["observed"]["state"] in ("busy", "ready", "waiting")
    text = f"-also check {said}: it's \"done\"! $HOME `id`"  # a leading dash, quotes, what shells expand
    assert box.pao("send", "--", "count-widgets", text).stderr.strip() == "pao: sent to count-widgets on box"
    assert text in _conversation_with(anthropic_stub, said).text()
    status = json.loads(box.pao("status", "count-widgets", "--json").stdout)
    assert status["machine"] == "box" and status["target"] == spawned["target"]

    remote = json.loads(box.remote_pao("list", "--json").stdout)["agents"]
    assert [agent["name"] for agent in remote] == ["count-widgets"]

    box.pao("kill", "count-widgets")
    assert _agents(box) == {}
    assert json.loads(box.remote_pao("list", "--json").stdout)["agents"] == []
    assert not agent_dir.exists()


def test_a_machine_that_goes_away_shows_its_agents_unreachable_and_comes_back(
    claude_box: Box, anthropic_stub: AnthropicStub
) -> None:
    box = claude_box
    box.remote_folder("api")
    box.pao("spawn", "tidy the api", "--on", "box", "--folder", "~/api", "--name", "api")
    _conversation_with(anthropic_stub, "tidy the api")  # a conversation to resume later
    checkpoint = box.pao("checkpoint", "api").stdout.strip()
    assert checkpoint.startswith("box:") and checkpoint.endswith(".json")

    box.write_config(deadline=2.0)  # the default deadline, for the fault
    box.sshd.stop()
    started = time.monotonic()
    listed = json.loads(box.pao("list", "--json").stdout)
    elapsed = time.monotonic() - started
    api = next(agent for agent in listed["agents"] if agent["name"] == "api")
    assert api["observed"]["state"] == "unreachable" and "machine box is unreachable" in api["observed"]["reason"]
    assert listed["machines"]["box"]["reachable"] is False and listed["machines"]["box"]["ms"] <= 2100
    assert elapsed < 2.0 + 8.0, "list costs the machine's deadline plus pao's own start-up, nothing more"
    table = box.pao("list").stdout
    assert "api" in table and "unreachable" in table
    sent = box.pao("send", "api", "hello", check=False)
    assert sent.returncode == 1 and sent.stderr.strip() == sent.stderr.strip().splitlines()[0]
    assert "unreachable" in sent.stderr
    assert "api" in _agents(box), "an unreachable agent is never removed"

    box.sshd.restart()
    box.write_config()
    assert _agents(box)["api"]["observed"]["state"] in ("ready", "waiting", "busy")
    paused = json.loads(box.pao("pause", "api", "--json").stdout)
    assert paused["agent"]["state"] == "paused" and _agents(box)["api"]["state"] == "paused"
    resumed = json.loads(box.pao("resume", "api", "--json").stdout)
    assert resumed["agent"]["state"] != "paused" and _agents(box)["api"]["state"] == resumed["agent"]["state"]
    marker = f"ALL-{uuid.uuid4().hex[:8]}"
    box.pao("broadcast", marker)
    _conversation_with(anthropic_stub, marker)
    box.pao("kill", "api")
    assert _agents(box) == {}



@pytest.mark.postgres
def test_one_registry_in_postgresql_for_both_machines(claude_box: Box, anthropic_stub: AnthropicStub) -> None:
    from pao_testing.postgres import postgres_url

    box = claude_box
    box.remote_folder("shop")
    with postgres_url() as url:
        shared = f'\n[registry]\nurl = "{url}"\n'
        box.write_config(extra=f'\n[machine]\nname = "laptop"\n{shared}')
        remote_config = box.sshd.home / ".config" / "pao" / "config.toml"
        remote_config.parent.mkdir(parents=True)
        remote_config.write_text(f'[machine]\nname = "box"\n{shared}')
        box.sshd.give(box.sshd.home / ".config")

        failed = box.pao("spawn", "tidy", "--on", "box", "--folder", "~/missing", check=False)
        assert failed.returncode == 2 and json.loads(box.pao("list", "--json").stdout)["agents"] == []

        spawned = json.loads(box.pao("spawn", "tidy the shop", "--on", "box", "--folder", "~/shop", "--name", "shop", "--json").stdout)
        assert spawned["name"] == "shop" and spawned["machine"] == "box"
        there = json.loads(box.remote_pao("list", "--json").stdout)["agents"]
        assert [(agent["name"], agent["machine"]) for agent in there] == [("shop", "box")], "one record, one registry"
        assert _agents(box)["shop"]["observed"]["state"] in ("busy", "ready", "waiting")
        marker = f"SHARED-{uuid.uuid4().hex[:8]}"
        box.pao("send", "shop", marker)
        _conversation_with(anthropic_stub, marker)

        box.sshd.stop()
        assert _agents(box)["shop"]["observed"]["state"] == "unreachable"
        box.sshd.restart()
        box.pao("kill", "shop")
        assert _agents(box) == {} and json.loads(box.remote_pao("list", "--json").stdout)["agents"] == []


@pytest.mark.postgres
def test_a_machine_with_its_own_registry_is_said_and_its_agent_kept_here(claude_box: Box,
                                                                          anthropic_stub: AnthropicStub) -> None:
    """This machine's registry is PostgreSQL, the other's is its own file: the spawn says so, and lists the agent."""
    from pao_testing.postgres import postgres_url

    box = claude_box
    box.remote_folder("shop")
    with postgres_url() as url:
        box.write_config(extra=f'\n[machine]\nname = "laptop"\n\n[registry]\nurl = "{url}"\n')
        spawned = box.pao("spawn", "tidy the shop", "--on", "box", "--folder", "~/shop", "--name", "shop", "--json")
        answer = json.loads(spawned.stdout)
        assert "keeps its own agent registry" in answer["registry_mismatch"] and "[registry] url" in spawned.stderr
        assert spawned.stderr.count("keeps its own agent registry") == 1
        assert [agent["name"] for agent in json.loads(box.remote_pao("list", "--json").stdout)["agents"]] == ["shop"]
        assert _agents(box)["shop"]["machine"] == "box"  # not lost: this machine lists it and reaches it
        box.pao("kill", "shop")
        assert _agents(box) == {} and json.loads(box.remote_pao("list", "--json").stdout)["agents"] == []
