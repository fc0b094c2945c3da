"""A CLI started before its briefing is composed: the bound its pipe's feeder waits, and whether the briefing got there.

For a host whose CLI reads its session channel's briefing file once as it starts
(``HostAgent.pipes_briefing``: Claude Code's ``--append-system-prompt-file``), ``pao spawn``
makes that file a FIFO, starts the CLI as soon as its window, session files and trust
pre-seed are written, and gathers and composes the briefing meanwhile. The launcher's feeder
(:func:`pao_agents.launch.feed_briefing`) writes it into the pipe once both the briefing and
the CLI's read are there: the CLI's first read waits for it, so it is in the first request
as before, redacted and bounded as before. A briefing not there within :func:`feeder`'s
bound (or a pao that died) leaves the CLI with an empty one: it goes on, and the spawn says so.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pao_agents.agentdir import BRIEFING
from pao_agents.launch import READY_SUFFIX
from pao_core.waiting import poll_until

if TYPE_CHECKING:
    from pao_agents.spec.records import SpawnRequest
    from pao_core.config import PaoConfig

GRACE = 3.0
"""Seconds past the longest a briefing takes in ``pao spawn`` (its helper's gathering and grace, then once more in its
own process) after which a CLI started first goes on without it."""
HANDED_WAIT = 2.0
"""Seconds the spawn's last step waits for the feeder to have taken the briefing (it usually has, long before)."""


def bound(config: PaoConfig, early_grace: float) -> float:
    """How long a CLI started first waits for its briefing: twice the gathering's deadline, ``early_grace`` and
    :data:`GRACE`."""
    return 2 * config.gather.deadline + early_grace + GRACE


def feeder(request: SpawnRequest, wait: float) -> dict[str, object]:
    """The launch spec's ``briefing``: the pipe, the bound on waiting for the briefing, and this process (its owner)."""
    assert request.agent_dir, "a piped briefing lives in the agent's folder"
    return {"pipe": str(Path(request.agent_dir, BRIEFING)), "wait": wait, "owner": os.getpid()}


def handed(request: SpawnRequest, wait: float, patience: float = HANDED_WAIT) -> bool | None:
    """Whether the feeder gave the CLI its briefing: ``True``; ``None`` while the CLI has not read its pipe yet (say, a
    trust dialog comes first: the feeder still waits for it). ``False``: the CLI went on without it, which is said on
    stderr, and the briefing is put in place as a plain file (a resume reads it). ``patience``: how long to let the
    feeder finish (none for a CLI waiting at its own dialog, which may read its pipe much later)."""
    assert request.agent_dir, "a piped briefing lives in the agent's folder"
    pipe = Path(request.agent_dir, BRIEFING)
    ready = Path(f"{pipe}{READY_SUFFIX}")
    if poll_until(lambda: not ready.exists(), patience, cap=0.02):
        return True
    if pipe.is_fifo():
        return None
    os.replace(ready, pipe)
    print(f"pao: {request.name} started without its briefing (not composed within {wait:g} s); "
          f"it is in {pipe} for a resume", file=sys.stderr)
    return False
