"""The built-in desktop notifier: a ``pao_agent_state_changed`` implementation, off unless configured.

``[notify] desktop = true`` turns it on; it tells the desktop (``notify-send`` on Linux
and BSD, ``osascript`` on macOS) when an agent enters one of ``[notify] states``. The
text goes to the notifier as argv, never through a shell or into AppleScript source.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from typing import TYPE_CHECKING

import attrs

from pao_agents.spec.options import notify_options
from pao_agents.spec.marker import hookimpl as agent_hookimpl

if TYPE_CHECKING:
    from pao_agents.spec.options import NotifyOptions
    from pao_core.config import PaoConfig
    from pao_agents.spec.records import AgentRecord
    from pao_core.plugins import Plugins

PLUGIN_NAME = "pao.desktop-notifier"
TIMEOUT = 5.0
"""A notifier that hangs must not hold up the command that saw the change."""

SAYS = {
    "waiting": "is waiting for your input",
    "blocked": "needs you: a dialog or permission prompt",
    "dead": "has exited",
    "finished": "has finished",
    "failed": "has failed",
}

_APPLESCRIPT = ("on run argv", "display notification (item 2 of argv) with title (item 1 of argv)", "end run")


def desktop_command(title: str, body: str, platform: str = sys.platform) -> list[str] | None:
    """The argv that shows a notification here, or ``None`` when the platform has no notifier."""
    if platform == "darwin":
        script = [arg for line in _APPLESCRIPT for arg in ("-e", line)]
        return ["osascript", *script, title, body] if shutil.which("osascript") else None
    binary = shutil.which("notify-send")
    return [binary, "--app-name=pao", title, body] if binary else None


@attrs.define
class DesktopNotifier:
    options: NotifyOptions

    @agent_hookimpl
    def pao_agent_state_changed(self, record: AgentRecord, old_state: str, new_state: str, source: str) -> None:
        from pao_core.sanitize import strip_controls  # only this path needs it: start-up stays light

        if new_state not in self.options.states:
            return
        says = SAYS.get(new_state, f"is {new_state}")
        command = desktop_command(f"pao: {record.name} {says}", strip_controls(f"{record.topic} ({record.folder})"))
        if command is not None:
            subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT, check=False)


def register_notifier(plugins: Plugins, config: PaoConfig) -> None:
    """Register the desktop notifier once per process, when the configuration turns it on."""
    if notify_options(config).desktop and not plugins.manager.has_plugin(PLUGIN_NAME):
        plugins.manager.register(DesktopNotifier(notify_options(config)), name=PLUGIN_NAME)
