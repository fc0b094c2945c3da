"""An agent's private folder: removed whole, whatever still appends to it."""

from __future__ import annotations

import threading
from pathlib import Path

from pao_agents import agentdir


def test_an_agent_s_folder_is_gone_after_kill_whatever_its_exiting_cli_s_hooks_append(tmp_path: Path) -> None:
    """A CLI killed runs its SessionEnd hook as it exits, appending by path while pao removes the folder: the folder
    is renamed away first, so those appends fail instead of refilling a folder that then stays."""
    for _ in range(20):
        folder = agentdir.fresh_agent_dir(tmp_path, "api")
        for index in range(200):  # something to remove while the appends go on
            (folder / f"f{index}").write_text("x")
        stop = threading.Event()

        def append() -> None:
            while not stop.is_set():
                try:
                    with open(folder / "events.jsonl", "a") as log:
                        log.write("{}\n")
                except OSError:
                    pass

        writers = [threading.Thread(target=append) for _ in range(2)]
        for writer in writers:
            writer.start()
        try:
            agentdir.remove_agent_dir(tmp_path, "api")
        finally:
            stop.set()
            for writer in writers:
                writer.join()
        assert not folder.exists()
        assert [p.name for p in (tmp_path / "agents").iterdir()] == []
