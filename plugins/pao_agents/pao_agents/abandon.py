"""A spawn's bookkeeping: its steps' clock, and undoing a spawn that failed after its name was reserved
(:func:`pao_agents.spawn.spawn`)."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

import attrs

from pao_agents.resolve import cleanup_written
from pao_agents.spec.errors import UnknownAgent
from pao_core.errors import PaoError
from pao_core.files import atomic_write, private_dir

if TYPE_CHECKING:
    from pao_agents.resolve import AgentContext
    from pao_agents.spec.contracts import HostAgent, TerminalDriver


def abandon(agents: AgentContext, name: str, driver: TerminalDriver, target: str, extra: Mapping[str, Any],
             host_agent: HostAgent) -> bool:
    """Undo a failed spawn: keep the last screen for the user, close the window, remove what pao wrote (trust
    entries included), free the name; false when the registry could not be told."""
    if target:
        try:
            screen = driver.read(target)
            failed = private_dir(Path(agents.config.home) / "failed")
            atomic_write(failed / f"{name}.screen.txt", screen)
        except PaoError:
            pass
        try:
            driver.kill(target)
        except PaoError:
            pass
    with contextlib.suppress(PaoError, OSError):
        cleanup_written(agents.config, name, extra)
    added = (extra.get("trust") or {}).get("added")
    with contextlib.suppress(PaoError, OSError):
        if added:
            host_agent.unseed(str(added.get("folder", "")), added)
    try:
        agents.registry.remove(name)
    except UnknownAgent:
        pass
    except PaoError:  # the registry went away mid-spawn
        return False
    return True


Reporter = Callable[[str, float, str], None]
"""Called as each spawn step ends: (step label, elapsed seconds, detail)."""


@attrs.define
class StepClock:
    """Each step's time since the last one ended, told to ``report`` as it ends."""

    steps: list[tuple[str, float]]
    report: Reporter | None
    last: float = attrs.field(factory=time.monotonic)

    def done(self, label: str, detail: str) -> None:
        now = time.monotonic()
        self.steps.append((label, now - self.last))
        if self.report is not None:
            self.report(label, now - self.last, detail)
        self.last = now
