"""What tmux itself draws on an agent's screen: the line under a pane whose process exited.

The tmux driver keeps a window open after its agent exits (``remain-on-exit``), so its
last screen stays readable, and tmux writes ``Pane is dead (status N, DATE)`` under it.
"""

from __future__ import annotations

import re
from typing import Sequence

import attrs

from pao_agents.spec import ReadinessDetector
from pao_agents.spec import ScreenVerdict

DEAD_NOTICE = "Pane is dead"
_DEAD = re.compile(rf"^{DEAD_NOTICE} \(status (?P<status>-?\d+)", re.MULTILINE)


@attrs.frozen
class ExitedPane(ReadinessDetector):
    """Any host's agent whose process ended: ``dead``, with its exit status and last words."""

    name: str = "tmux-exited-pane"
    hosts: Sequence[str] = ()

    def classify(self, screen: str) -> ScreenVerdict | None:
        dead = _DEAD.search(screen)
        if dead is None:
            return None
        lines = [line.strip() for line in screen[: dead.start()].splitlines() if line.strip()]
        said = f": {lines[-1][:200]}" if lines else ""
        return ScreenVerdict("dead", f"the agent exited with status {dead['status']}{said}", self.name)
