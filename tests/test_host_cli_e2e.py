"""Codex CLI and Gemini CLI for real: primed through their context files, no dialog, nudged.

Each test runs the pinned CLI (scripts/setup --test) in a private tmux server against
its loopback API stub, with HOME a fresh folder holding only the user's own model
settings. pao's steps run through the host profile: briefing from a memory backend,
delivery into the host's context file, pre-seed, the profile's command line, the
readiness detectors, the nudge and its submit key. The stub's recorded request must
carry a marker that exists only in memory. As root these tests fail (never skip)
outside a loopback-only network namespace: scripts/test provides one.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import time
import uuid
import tomllib
from pathlib import Path

import attrs
import pytest

from pao_agents.spec import host_agents, readiness_detectors
from pao_core.plugins import load_config
from pao_core.contracts import MemoryBackend
from pao_agents.delivery import deliver
from pao_agents.lifecycle import agent_environment
from pao_core.models import MemoryItem
from pao_agents.spec import AgentRecord, SpawnRequest
from pao_core.gather import brief
from pao_agents.session import channels
from pao_core.plugins import build_plugins
from pao_agents.readiness import ScreenReader
from pao_testing.host_cases import CASES
from pao_testing.hostrun import HostTmux, fail_unless_loopback_only, watch

MARKER = "QUOKKA-7731"
TOPIC = "tidy the invoice exporter"


@attrs.frozen
class OneNoteBackend(MemoryBackend):
    """A memory store holding one note; the marker exists nowhere else."""

    name: str = "notes"

    def search(self, query: str, limit: int, deadline: float) -> list[MemoryItem]:
        text = f"The invoice exporter keeps its retry state in {MARKER}.toml; tidy it there."
        return [MemoryItem(backend=self.name, id="note:1", title="invoice exporter", text=text, score=1.0, rank=1)]

    def health(self, deadline: float) -> str:
        return "one note"


@pytest.fixture
def real_cli_allowed() -> None:
    fail_unless_loopback_only()


def _start_until_ready(tmux: HostTmux, host: str, folder: Path, command: list[str], env: dict[str, str], classify) -> str:
    """The CLI starts in a pane of its own and reaches its prompt with no dialog on the way; returns the pane."""
    pane = tmux.start("agent", str(folder), command, env)
    frames = watch(lambda: tmux.capture(pane), classify, lambda s: s in ("ready", "blocked", "waiting"), 90)
    states = [f.state for f in frames]
    assert not {"blocked", "waiting"} & set(states), frames[-1].screen
    assert states[-1] == "ready", f"not ready after 90 s: {states}\n{frames[-1].screen}"
    print(f"{host}: ready {frames[-1].at:.2f} s after start")
    return pane


@pytest.mark.realcli
@pytest.mark.parametrize("host", sorted(CASES))
def test_primed_agent_starts_without_dialog_and_takes_the_nudge(
    host: str, real_cli_allowed: None, tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = CASES[host]
    assert case.binary is not None and case.binary.exists(), f"{case.binary} is missing: run scripts/setup --test"
    home = isolated_home / "user"
    folder = tmp_path / "exporter"
    folder.mkdir()
    subprocess.run(["git", "init", "-q", str(folder)], check=True)  # Codex asks for trust only in a git work tree

    with case.make_stub() as stub:
        user_env = case.user_setup(home, stub)
        monkeypatch.setenv(case.command_variable, str(case.binary))
        config, plugins = load_config(), build_plugins()
        profile = next(h for h in host_agents(plugins, config) if h.name == host)
        request = SpawnRequest(topic=TOPIC, folder=str(folder), name="exporter", host=host)
        if channels(profile).chooses_session_id:  # as pao spawn does, before the CLI starts
            request = attrs.evolve(request, session_id=str(uuid.uuid4()))

        briefing = brief(TOPIC, folders=[str(folder)], config=config, plugins=plugins, backends=[OneNoteBackend()])
        assert MARKER in briefing.markdown
        briefing_file = str(folder / config.briefing.filename)
        block = profile.context_block(briefing_file, briefing.markdown)
        deliver(briefing, folder, config=config, context_file=profile.context_file, context_block=block)
        profile.preseed(str(folder))
        nudge = profile.nudge(request, briefing_file)
        assert MARKER not in nudge

        user = {"HOME": str(home), "PATH": os.environ["PATH"], "TERM": "xterm-256color", "LANG": "C.UTF-8", **user_env}
        env = agent_environment(user, profile.environment(request))
        record = AgentRecord(name=request.name, folder=request.folder, topic=TOPIC, host=host, terminal="tmux",
                             target="", created_at=dt.datetime.now(dt.timezone.utc))
        reader = ScreenReader.for_host(host, readiness_detectors(plugins, config), plugins)
        classify = lambda screen: (lambda v: (v.state, v.reason))(reader.classify(screen))  # noqa: E731
        tmux = HostTmux(f"pao-test-{os.getpid()}-{host}")
        try:
            command = profile.command(request)
            pane = _start_until_ready(tmux, host, folder, command, env, classify)

            tmux.paste(pane, nudge)
            tail = nudge.split()[-1]
            shown = watch(lambda: tmux.capture(pane), lambda s: ("shown" if tail in s else "no", None),
                          lambda s: s == "shown", 20)
            assert shown[-1].state == "shown", shown[-1].screen
            _submit(tmux, pane, profile.submit_key, reader)

            sent = stub.wait_for_text(case.model_route, MARKER, 60)
            assert sent is not None, f"no {case.model_route} request carried the marker: {[r.path for r in stub.requests]}"
            assert any(nudge in text for text in sent.strings()), "the nudge reached the model with the briefing"

            session = profile.session_id(record)
            assert session, "the session id is found after the nudge"
            assert session in profile.resume_command(attrs.evolve(record, session_id=session))
            _check_host_side(host, home, folder, session, command, sent)
        finally:
            tmux.close()


def _submit(tmux: HostTmux, pane: str, key: str, reader: ScreenReader) -> None:
    """Press the submit key until the agent is busy or the input is empty again (twice at most).

    A key that follows a paste too closely can be taken as part of the paste (Gemini
    CLI); pao's lifecycle presses a second time for the same reason.
    """
    for _attempt in range(2):
        before = tmux.capture(pane)
        tmux.press(pane, key)
        frames = watch(lambda: tmux.capture(pane), lambda s: (reader.classify(s).state, None),
                       lambda s: s in ("busy", "ready"), 5)
        if frames[-1].state in ("busy", "ready") and frames[-1].screen != before:
            return
    raise AssertionError(f"{key} did not submit the nudge:\n{tmux.capture(pane)}")


def _check_host_side(host: str, home: Path, folder: Path, session: str, command: list[str], sent) -> None:
    """What each host wrote: its own record of the session, and pao's pre-seed next to the user's settings."""
    if host == "codex":
        assert sent.header("session-id") == session, "the transcript's id is the one Codex sends"
        config = tomllib.loads((home / ".codex" / "config.toml").read_text())
        assert config["model_provider"] == "loopback" and config["model_providers"]["loopback"]["wire_api"] == "responses"
        assert config["projects"][str(folder)] == {"trust_level": "trusted"}
        assert json.loads(sent.header("x-codex-turn-metadata") or "{}").get("analytics_enabled") is False
        assert "MARKER" not in session
    else:
        assert command[command.index("--session-id") + 1] == session
        deadline = time.monotonic() + 10
        while not list(home.glob(f".gemini/tmp/*/chats/session-*-{session[:8]}.jsonl")) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert list(home.glob(f".gemini/tmp/*/chats/session-*-{session[:8]}.jsonl")), "Gemini wrote the session we named"
        settings = json.loads((home / ".gemini" / "settings.json").read_text())
        assert settings["ui"] == {"theme": "Default"} and settings["general"]["vimMode"] is False
        assert sent.header("x-goog-api-key") == "loopback-key"
