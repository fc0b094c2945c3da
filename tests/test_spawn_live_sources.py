"""``pao spawn`` briefs from live sources: a transcript written since the last index and an
edit of the MCP memory file reach the new agent's briefing, with no ``pao history index``
or ``pao memory import`` in between. A real fake agent in real tmux, the real plugins."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

import pao_historyworker.hooks
import pao_postgres.hooks
from pao_testing.lifecycle.fixtures import Pao, pao  # noqa: F401  (fixture)
from pao_core.plugins import get_plugins


def _line(kind: str, uuid: str, text: str) -> str:
    content = text if kind == "user" else [{"type": "text", "text": text}]
    return json.dumps({"type": kind, "uuid": uuid, "sessionId": "s-morning", "timestamp": "2026-11-30T08:00:00Z",
                       "cwd": "/home/sam/code/api", "gitBranch": "main", "message": {"role": kind, "content": content}}) + "\n"


@pytest.mark.hook("pao_memory_backends")
def test_spawn_briefs_from_this_morning_s_session_and_the_edited_memory_file(pao: Pao, monkeypatch, tmp_path: Path) -> None:
    for module in (pao_historyworker.hooks, pao_postgres.hooks):
        get_plugins().manager.register(module, name=module.__name__)
    memory = tmp_path / "memory.jsonl"
    memory.write_text(json.dumps({"type": "entity", "name": "api", "entityType": "service",
                                  "observations": ["the api caches sessions in redis"]}))
    monkeypatch.setenv("PAO_MEMORY_FILE", str(memory))
    assert pao("memory", "search", "api sessions cache")[0] == 0  # synced once: the old state
    memory.write_text(json.dumps({"type": "entity", "name": "api", "entityType": "service",
                                  "observations": ["the api caches sessions in valkey"]}))
    stamp = time.time() - 1
    os.utime(memory, (stamp, stamp))
    sessions = Path(os.environ["HOME"]) / ".claude" / "projects" / "-home-sam-code-api"
    sessions.mkdir(parents=True)
    (sessions / "s-morning.jsonl").write_text(
        _line("user", "u1", "the api session cache evicts too early under load")
        + _line("assistant", "a1", "Raised the session cache TTL to 30 minutes in the api.")
    )
    folder = pao.folder("api")
    code, out, err = pao("spawn", "api session cache evicts too early", "--folder", str(folder), "--no-nudge", "--json")
    assert code == 0, err
    briefing = (folder / "CONTEXT_BRIEFING.md").read_text()
    assert "Raised the session cache TTL to 30 minutes" in briefing  # indexed before the search
    assert "valkey" in briefing and "redis" not in briefing  # the edit, not both
