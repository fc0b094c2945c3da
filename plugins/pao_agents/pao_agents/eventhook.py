"""What a CLI's hook runs for an event that may change its agent's state: the state recorded and notified
without ``pao monitor``.

Every event is appended by one ``sh`` (:func:`pao_agents.agentdir.append_command`). An event that may end a
turn or ask the user (its usual state, :data:`pao_agents.states.STATE_OF_EVENT`, is neither busy nor nothing: Stop,
Notification...) then starts this module in the background (``python -I -m pao_agents.eventhook AGENT_DIR``),
so the CLI never waits for it. A busy event (a prompt, a tool) starts it only when the agent's ``state`` file
does not already say ``busy``, nor a state only its command changes (``starting``: a spawn under way, whose first
prompt would otherwise start an interpreter beside the CLI as it sends its first request): once per turn, not once
per tool. The module reads the event log under the
registry's lock and records its newest state through the one state-changing place
(:meth:`pao_agents.resolve.AgentContext.set_state`), which fires ``pao_agent_state_changed`` and so the
notifier. Its errors go to the agent's ``notify.log``; nothing reaches the CLI. It trims that log and the event
log first (:mod:`pao_agents.notifylog`).
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pao_agents.agentdir import (EVENTS, EVENTS_KEEP, EVENTS_LIMIT, STATE_FILE, STATE_OF_EVENT, append_command,
                                 newest_state, read_events)

if TYPE_CHECKING:
    from pao_agents.spec.records import AgentRecord

ERROR_LOG = "notify.log"
HARD_LIMIT = 60
"""Seconds after which the background process ends, whatever it waits for."""
KEEPS_ITS_STATE = frozenset({"starting", "paused"})
"""Recorded states only their command changes: a spawn not finished yet, a paused agent's late event."""


def event_hook_command(log: Path, event: str, *, from_argument: bool = False) -> str:
    """The ``sh`` command of ``event``'s hook: append it to ``log``; for an event that may change the agent's
    state, then start the recorder in the background (no shell word of it comes from the event)."""
    append = append_command(log, from_argument=from_argument)
    state = STATE_OF_EVENT.get(event)  # what the event usually means: its payload may say more (a Notification's type)
    if state is None:
        return append
    folder = log.parent
    # hang-ups ignored: a CLI that exits (Claude Code 2.0.77 after SessionEnd) signals what its hooks left running
    record = (f"(trap '' HUP INT TERM; exec {shlex.quote(sys.executable)} -I -m pao_agents.eventhook "
              f"{shlex.quote(str(folder))} </dev/null >/dev/null 2>>{shlex.quote(str(folder / ERROR_LOG))}) &")
    if state != "busy":
        return f"{append}; {record}"
    unchanged = "|".join(sorted({"busy", *KEEPS_ITS_STATE}))  # a busy event cannot change these: no recorder
    return f"{append}; s=; {{ read -r s < {shlex.quote(str(folder / STATE_FILE))}; }} 2>/dev/null; " \
           f"case \"$s\" in {unchanged}) ;; *) {record} ;; esac"


def record_events(agent_dir: Path) -> AgentRecord:
    """Record the newest state of the agent's event log (fires ``pao_agent_state_changed`` when it changed)."""
    from pao_agents.resolve import AgentContext  # the registry and plugins: only the recorder
    from pao_core.plugins import load_config  # likewise

    log = agent_dir / EVENTS

    def newest(record: AgentRecord) -> str:
        if record.state in KEEPS_ITS_STATE or Path(str(record.extra.get("agent_dir"))) != agent_dir:
            return record.state
        return newest_state(read_events(log)) or record.state

    return AgentContext.open(load_config()).set_state(agent_dir.name, newest, source="hooks")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -I -m pao_agents.eventhook AGENT_DIR", file=sys.stderr)
        return 2
    agent_dir = Path(os.path.abspath(args[0]))
    os.environ["PAO_HOME"] = str(agent_dir.parent.parent)  # the agent's pao, whatever the CLI's environment says
    if hasattr(signal, "alarm"):
        signal.alarm(HARD_LIMIT)
    try:
        from pao_agents.names import check_name  # after the alarm: nothing may hold the process past it
        from pao_agents.notifylog import trim_log  # likewise

        check_name(agent_dir.name)
        trim_log(agent_dir / ERROR_LOG)  # capped: this run's errors go to the trimmed file
        trim_log(agent_dir / EVENTS, EVENTS_LIMIT, EVENTS_KEEP)  # before reading it: the newest lines stay
        record_events(agent_dir)
    except Exception as exc:  # one line in the agent's notify.log; the CLI never sees it
        from pao_agents.notifylog import append_line  # only a failure needs them
        from pao_core.errors import describe  # likewise
        from pao_core.sanitize import mask_url  # likewise

        said = f"pao: {agent_dir.name}: {mask_url(describe(exc))}"
        if not append_line(agent_dir / ERROR_LOG, said):  # not a file pao writes (a link): where the hook said
            print(said, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
