"""Fault suite, delivery: two ``pao spawn`` processes into one folder at once.

Both spawns run for real (the fake agent in real tmux, testing/pao_testing/lifecycle), with a
host whose context file is ``CLAUDE.md`` and which already holds the user's own notes.
(The delivery function alone, under many concurrent writers: plugins/pao_agents/tests/test_delivery.py.)
"""

from __future__ import annotations

from pao_testing.lifecycle.fixtures import Pao, pao  # noqa: F401  (fixture)
from pao_core.briefing import verify
from pao_agents.delivery import BEGIN, END
from pao_agents.registry import JsonRegistry


def test_two_spawns_into_one_folder_leave_one_block_and_a_whole_briefing(pao: Pao) -> None:  # noqa: F811
    folder = pao.folder("shared-repo")
    user_notes = "# Notes\n\nUse `make test`.\n"
    (folder / "CLAUDE.md").write_text(user_notes)
    env = {"FAKE_HOST_CONTEXT_FILE": "CLAUDE.md"}
    procs = [pao.subprocess("spawn", f"task {n}", "--folder", str(folder), "--no-nudge", env=env) for n in (1, 2)]
    results = [(proc.wait(timeout=90), proc.stderr.read() if proc.stderr else "") for proc in procs]
    assert all(code == 0 for code, _ in results), results

    claude = (folder / "CLAUDE.md").read_text()
    assert claude.startswith(user_notes)
    assert claude.count(BEGIN) == 1 and claude.count(END) == 1
    block = claude[claude.index(BEGIN):]
    assert block == f"{BEGIN}\nRead CONTEXT_BRIEFING.md before you start.\n{END}\n"
    briefing = (folder / "CONTEXT_BRIEFING.md").read_text()
    assert verify(briefing)  # its footer's hash matches its body: one writer's whole file
    assert briefing.startswith("# Context briefing: task ")
    assert sorted(record.name for record in JsonRegistry(pao.home).list()) == ["task-1", "task-2"]
    assert sorted(p.name for p in folder.iterdir()) == [".fake-agent", "CLAUDE.md", "CONTEXT_BRIEFING.md"]
