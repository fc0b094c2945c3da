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
    """``PAO_TEST_SCREEN_OFF=1``: reading an agent's state from its screen fails the command."""
    from pao_agents.readiness import ScreenReader

    def refuse(self, screen):
        raise AssertionError("the screen classifier was asked for the state")

    ScreenReader.classify = refuse


if __name__ == "__main__":
    if os.environ.get("PAO_TEST_SCREEN_OFF") == "1":
        _screen_off()
    get_plugins().manager.register(pao_notes, name="notes")
    sys.exit(main(sys.argv[1:]))
