"""A test host agent (``fake``) and its detector, driving ``fake_agent.py`` for real in tmux.

``FakeHostPlugin`` is registered on a plugin manager in tests (and unregistered in a
``finally``); ``run_pao.py`` registers it in a ``pao`` subprocess.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Mapping

import attrs

from pao_agents.spec import HostAgent, ReadinessDetector
from pao_core.hookspecs import hookimpl
from pao_agents.spec import AgentRecord, ScreenVerdict, SpawnRequest

FAKE_AGENT = str(Path(__file__).with_name("fake_agent.py"))
NBSP = "\u00a0"
_READY = re.compile(rf"^─+\n❯{NBSP}.*\n─+$", re.MULTILINE)


@attrs.define
class FakeHost(HostAgent):
    name: str = "fake"
    context_file: str = attrs.field(factory=lambda: os.environ.get("FAKE_HOST_CONTEXT_FILE", "AGENTS.md"))
    submit_key: str = "Enter"
    preseeded: list[str] = attrs.field(factory=list)
    unseeded: list[str] = attrs.field(factory=list)

    def command(self, request: SpawnRequest) -> list[str]:
        return [sys.executable, FAKE_AGENT]

    def environment(self, request: SpawnRequest) -> Mapping[str, str]:
        return {"FAKE_AGENT_NAME": request.name}

    def context_block(self, briefing_file: str, briefing_markdown: str) -> str:
        return f"Read {os.path.basename(briefing_file)} before you start.\n"

    def project_risks(self, folder: str) -> list[str]:
        """Claude Code's project files, read as the Claude Code profile reads them (the fake agent runs none)."""
        from pao_hosts.project_files import claude_risks  # the real reader: trust tests spawn through it

        return claude_risks(folder)

    def preseed(self, folder: str) -> dict[str, str]:
        self.preseeded.append(folder)
        return {"folder": folder}

    def unseed(self, folder: str, added: Mapping[str, str]) -> None:
        self.unseeded.append(added["folder"])

    def nudge(self, request: SpawnRequest, briefing_file: str) -> str:
        return f"Task: {request.topic}. Read {os.path.basename(briefing_file)} first."

    def session_id(self, record: AgentRecord) -> str | None:
        sessions = Path(record.folder, ".fake-agent", "sessions")
        files = sorted(sessions.glob("*.jsonl"), key=lambda p: p.stat().st_mtime) if sessions.is_dir() else []
        return files[-1].stem if files else None

    def resume_command(self, record: AgentRecord) -> list[str]:
        session = record.session_id or self.session_id(record)
        return [sys.executable, FAKE_AGENT, *(["--resume", session] if session else [])]


@attrs.define
class FakeDetector(ReadinessDetector):
    name: str = "fake-screen"
    hosts: tuple[str, ...] = ("fake",)

    def classify(self, screen: str) -> ScreenVerdict | None:
        if "Do you trust the files" in screen:
            return ScreenVerdict("waiting", "the agent asks whether to trust the folder; answer it in the window")
        if "esc to interrupt" in screen:
            return ScreenVerdict("busy")
        if _READY.search(screen.replace("\r", "")):
            return ScreenVerdict("ready")
        return None


class FakeHostPlugin:
    """The plugin object: one host and one detector."""

    def __init__(self) -> None:
        self.host = FakeHost()
        self.detector = FakeDetector()
        self.spawned: list[AgentRecord] = []
        self.written: list[tuple[str, str]] = []

    @hookimpl
    def pao_host_agents(self, config: object) -> list[FakeHost]:
        return [self.host]

    @hookimpl
    def pao_readiness_detectors(self, config: object) -> list[FakeDetector]:
        return [self.detector]

    @hookimpl
    def pao_agent_spawned(self, record: AgentRecord) -> None:
        self.spawned.append(record)

    @hookimpl
    def pao_briefing_written(self, briefing: object, folder: str, path: str) -> None:
        self.written.append((folder, path))


PLUGIN = FakeHostPlugin()
"""What an entry point names when the fake host is installed as a distribution (``benches/lifecycle_bench.py``)."""


def received(folder: str | os.PathLike[str]) -> list[dict]:
    """What the fake agent in ``folder`` was sent, in order."""
    path = Path(folder, ".fake-agent", "received.jsonl")
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
