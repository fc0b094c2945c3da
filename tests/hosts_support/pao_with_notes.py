"""``python pao_with_notes.py ARGS...``: the real ``pao`` CLI with the pao-notes example backend registered.

The notes backend (docs/examples/pao-notes) reads ``~/notes.md``: a memory store
that exists on every machine, so a marker in it exists only in memory.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "examples" / "pao-notes"))

import pao_notes  # noqa: E402

from pao_core.cli import main  # noqa: E402
from pao_core.plugins import get_plugins  # noqa: E402

def _screen_off() -> None:
    """``PAO_TEST_SCREEN_OFF=1``: every screen reads ``unknown``, so only the CLI's events can give the state."""
    from pao_agents.readiness import ScreenReader
    from pao_agents.spec import ScreenVerdict

    def blind(self, screen):
        return ScreenVerdict("unknown")

    ScreenReader.classify = blind


def _slow_notes(seconds: float, done: str) -> None:
    """``PAO_TEST_NOTES_DELAY=SECONDS``: each search of the notes takes that long, and writes when it ended to the
    file ``PAO_TEST_NOTES_DONE`` (a slow store: the briefing is composed well after the spawn began)."""
    import time

    search = pao_notes.NotesBackend.search

    def slow(self, query, limit, deadline):
        time.sleep(seconds)
        found = search(self, query, limit, deadline + seconds)
        Path(done).write_text(repr(time.time()))
        return found

    pao_notes.NotesBackend.search = slow


if __name__ == "__main__":
    if os.environ.get("PAO_TEST_SCREEN_OFF") == "1":
        _screen_off()
    if os.environ.get("PAO_TEST_NOTES_DELAY"):
        _slow_notes(float(os.environ["PAO_TEST_NOTES_DELAY"]), os.environ["PAO_TEST_NOTES_DONE"])
    get_plugins().manager.register(pao_notes, name="notes")
    sys.exit(main(sys.argv[1:]))
