"""pao's notifier: a ``pao_agent_state_changed`` implementation, on when ``[notify]`` turns on a channel.

When an agent enters one of ``[notify] states`` (``finished``: a turn ended, the agent ready after busy), it
tells the desktop (``notify-send`` on Linux and the BSDs, ``osascript`` on macOS), runs ``[notify] command``
and POSTs to ``[notify] webhook``, each on its own thread within ``[notify] timeout``. The same agent and
state again within ``[notify] collapse`` seconds is one notification, across every pao process (the hook
commands of the CLIs notify too: :mod:`pao_agents.eventhook`). Text goes to the programs as argv, never
through a shell or into AppleScript source.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from pao_agents.notify_channels import (ChannelFailed, command_argv, desktop_command, post_webhook,  # noqa: F401
                                        run_quietly)
from pao_agents.spec.marker import hookimpl as agent_hookimpl
from pao_agents.spec.options import notify_options

if TYPE_CHECKING:
    from pao_agents.spec.options import NotifyOptions
    from pao_agents.spec.records import AgentRecord
    from pao_core.config import PaoConfig
    from pao_core.plugins import Plugins

PLUGIN_NAME = "pao.notifier"
SEEN_FILE = "notified.json"
"""``$PAO_HOME/notified.json``: when each agent was last notified of each state (for ``collapse``)."""
WORDS_LIMIT = 200
"""Characters of one word of a notice taken from the agent (its topic, folder, reason)."""
TURN_ENDS_FROM = frozenset({"busy", "waiting"})

SAYS = {
    "finished": "has finished its turn",
    "waiting": "is waiting for you",
    "blocked": "needs you: a dialog or permission prompt",
    "dead": "has exited",
    "failed": "has failed",
}


def notice_state(old_state: str, new_state: str) -> str:
    """What a change is worth notifying as: ``finished`` for an agent ready after working, else its new state."""
    return "finished" if new_state == "ready" and old_state in TURN_ENDS_FROM else new_state


def untrusted_words(text: str, limit: int = WORDS_LIMIT) -> str:
    """Text from an agent or its memory, fit for a notification: control characters and secrets removed,
    on one line, at most ``limit`` characters."""
    from pao_core.sanitize import redact_secrets, strip_controls, truncate  # only a notice needs them

    return truncate(" ".join(redact_secrets(strip_controls(text)).split()), limit)


def event_reason(record: AgentRecord) -> str:
    """What the agent's CLI said with its newest event (a permission prompt's message, an error), if anything."""
    agent_dir = record.extra.get("agent_dir")
    if not record.extra.get("events") or not agent_dir:
        return ""
    from pao_agents.agentdir import EVENTS, read_events  # only a notice of a hook agent reads its log

    events = read_events(Path(agent_dir, EVENTS), 16 * 1024)
    payload = events[-1]["event"] if events else {}
    said = next((payload.get(key) for key in ("message", "error", "reason") if isinstance(payload.get(key), str)), "")
    return said or ""


def notice(record: AgentRecord, state: str) -> dict[str, str]:
    """The words of one notification: its title, body and each placeholder's value, all bounded and clean."""
    name = untrusted_words(record.name, 64)
    reason = untrusted_words(str(record.extra.get("waiting_for") or "") or event_reason(record))
    topic, folder = untrusted_words(record.topic), untrusted_words(record.folder)
    title = f"pao: {name} {SAYS.get(state, f'is {state}')}"
    body = f"{topic} ({folder})" + (f": {reason}" if reason else "")
    return {"name": name, "state": state, "reason": reason, "topic": topic, "folder": folder,
            "title": title, "body": body}


def first_in_window(home: str, name: str, state: str, window: float, now: float | None = None) -> bool:
    """Whether ``name`` entering ``state`` is news: not notified within ``window`` seconds, by any pao process
    (remembered in ``$PAO_HOME/notified.json`` under its lock)."""
    if window <= 0:
        return True
    from pao_agents.jsonedit import update_json  # only a notice needs it

    now = time.time() if now is None else now
    key, fresh = f"{name}/{state}", []

    def change(seen: dict[str, Any]) -> None:
        for old in [k for k, at in seen.items() if not isinstance(at, (int, float)) or now - at >= window]:
            del seen[old]
        if key not in seen:
            seen[key] = now
            fresh.append(key)

    update_json(Path(home, SEEN_FILE), change, backup=False, no_symlink=True)
    return bool(fresh)


def deliver(options: NotifyOptions, words: dict[str, str]) -> list[str]:
    """Send ``words`` through every configured channel at once; what failed, one line each (URLs masked)."""
    from pao_core.waiting import start  # threads: only a notice needs them

    jobs = []
    if options.desktop:
        argv = desktop_command(words["title"], words["body"])
        if argv is not None:  # no notifier here: nothing to show it with (pao doctor says so)
            jobs.append(("desktop", lambda argv=argv: run_quietly(argv, options.timeout)))
    if options.command:
        command = command_argv(options.command, words)
        jobs.append(("command", lambda: run_quietly(command, options.timeout)))
    if options.webhook:
        jobs.append(("webhook", lambda: post_webhook(options.webhook, options.webhook_style, words, options.timeout)))
    running = [(channel, start(job, name=f"pao-notify-{channel}")) for channel, job in jobs]
    deadline, failures = time.monotonic() + options.timeout + 1.0, []
    for channel, outcome in running:
        try:
            outcome.result(timeout=max(0.0, deadline - time.monotonic()))
        except ChannelFailed as exc:
            failures.append(f"{channel}: {exc}")
        except TimeoutError:
            failures.append(f"{channel}: no answer within {options.timeout:g} s")
        except Exception as exc:  # a channel's failure is reported, never raised into the change that fired it
            failures.append(f"{channel}: {type(exc).__name__}")
    return failures


@attrs.define
class Notifier:
    options: NotifyOptions
    home: str

    @agent_hookimpl
    def pao_agent_state_changed(self, record: AgentRecord, old_state: str, new_state: str, source: str) -> None:
        state = notice_state(old_state, new_state)
        if state not in self.options.states or not first_in_window(self.home, record.name, state,
                                                                     self.options.collapse):
            return
        for failure in deliver(self.options, notice(record, state)):
            print(f"pao: notify {record.name} {state}: {failure}", file=sys.stderr)


def register_notifier(plugins: Plugins, config: PaoConfig) -> None:
    """Register the notifier once per process, when the configuration turns a channel on."""
    options = notify_options(config)
    if options.any_channel and not plugins.manager.has_plugin(PLUGIN_NAME):
        plugins.manager.register(Notifier(options, str(config.home)), name=PLUGIN_NAME)
