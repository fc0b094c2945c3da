"""The one seam between the driver and macOS: Terminal.app, System Events, the clipboard.

Everything the driver says to the Mac goes through :class:`MacApps`. On a Mac,
:func:`connect_appscript` fills it with appscript's ``app('Terminal')`` and
``app('System Events')``, appscript's ``k`` keywords, the text pasteboard (``pbcopy`` /
``pbpaste``) and the tty process ender. Tests fill it with
:class:`pao_testing.terminalapp.FakeMac`, a recording fake of the same shape.

appscript passes strings as Apple event parameters, so no AppleScript source is ever
built and no AppleScript quoting is needed anywhere.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import sys
from typing import Any, Iterator, Protocol

import attrs

from pao_core.errors import PaoError

from pao_terminalapp.errors import NotRunning, TabGone, TerminalAppError
from pao_terminalapp.ttys import PsTtyProcesses

TERMINAL = "Terminal.app"
SYSTEM_EVENTS = "System Events"


class Clipboard(Protocol):
    """The text clipboard (general pasteboard)."""

    def get(self) -> str: ...

    def set(self, text: str) -> None: ...


class TtyProcesses(Protocol):
    """Ends the processes attached to one terminal device."""

    def end(self, tty: str, grace: float) -> list[int]: ...


@attrs.frozen
class MacApps:
    """What the driver talks to. ``terminal`` and ``system_events`` are appscript apps."""

    terminal: Any
    system_events: Any
    keys: Any
    clipboard: Clipboard
    ttys: TtyProcesses


def macos_reason(platform: str = sys.platform) -> str | None:
    """Why the Terminal.app driver cannot run here, or ``None`` when it can."""
    if platform != "darwin":
        return f"Terminal.app needs macOS (this is {platform})"
    if importlib.util.find_spec("appscript") is None:
        return "appscript is not installed: pip install appscript (or reinstall pao-terminalapp)"
    return None


def connect_appscript() -> MacApps:
    """The real seam on a Mac (imports appscript, so only call it after :func:`macos_reason`)."""
    from appscript import app, k  # macOS only: imported once the driver is known to run here

    return MacApps(
        terminal=app("Terminal"),
        system_events=app("System Events"),
        keys=k,
        clipboard=PbClipboard(),
        ttys=PsTtyProcesses(),
    )


@attrs.frozen
class PbClipboard:
    """The text clipboard through ``pbcopy``/``pbpaste``, always as UTF-8.

    Only text is saved and restored: an image on the clipboard comes back empty.
    """

    pbcopy: str = "/usr/bin/pbcopy"
    pbpaste: str = "/usr/bin/pbpaste"
    timeout: float = 5.0

    def get(self) -> str:
        return self._run([self.pbpaste, "-Prefer", "txt"], None)

    def set(self, text: str) -> None:
        self._run([self.pbcopy], text)

    def _run(self, argv: list[str], text: str | None) -> str:
        # pbcopy/pbpaste pick their encoding from the locale; pin UTF-8 for non-ASCII text.
        env = {**os.environ, "LANG": "en_US.UTF-8", "LC_ALL": "en_US.UTF-8"}
        try:
            done = subprocess.run(
                argv,
                input=None if text is None else text.encode("utf-8"),
                capture_output=True,
                env=env,
                timeout=self.timeout,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise TerminalAppError(f"cannot use the clipboard ({argv[0]}): {exc}") from None
        if done.returncode != 0:
            detail = " ".join(done.stderr.decode("utf-8", "replace").split()) or f"exit status {done.returncode}"
            raise TerminalAppError(f"cannot use the clipboard ({argv[0]}): {detail}")
        return done.stdout.decode("utf-8", "replace")


_AUTOMATION_DENIED = {-1743}
_NOT_RUNNING = {-600, -609}
_NO_SUCH_OBJECT = {-1728, -1719}
_ASSISTIVE_DENIED = {-1719, -25211, 1002}
_TIMED_OUT = {-1712}


@contextlib.contextmanager
def talking_to(app_label: str, window_id: int | None = None) -> Iterator[None]:
    """Turn an appscript error of ``app_label`` into one line that says what to do.

    appscript raises ``CommandError`` with ``errornumber``/``errormessage``; it is
    recognised by those attributes, so this module never imports appscript.
    """
    try:
        yield
    except PaoError:
        raise
    except Exception as exc:
        number = getattr(exc, "errornumber", None)
        if not isinstance(number, int):
            raise
        message = " ".join(str(getattr(exc, "errormessage", "") or exc).split())
        raise apple_error(app_label, number, message, window_id) from None


def terminal_not_running() -> NotRunning:
    return NotRunning(f"{TERMINAL} is not running (it was quit?): the agent's tab is gone; spawn the agent again")


def apple_error(app_label: str, number: int, message: str, window_id: int | None) -> TerminalAppError:
    """The one-line error for Apple event error ``number`` from ``app_label``."""
    if number in _AUTOMATION_DENIED:
        return TerminalAppError(
            f"macOS does not let pao control {app_label}: allow it in System Settings > Privacy & Security > "
            f"Automation (turn on {app_label} under the app that runs pao), then retry"
        )
    if app_label == SYSTEM_EVENTS and number in _ASSISTIVE_DENIED:
        return TerminalAppError(
            "macOS does not let pao send keystrokes: add the app that runs pao (Terminal, iTerm, ...) in "
            "System Settings > Privacy & Security > Accessibility, then retry"
        )
    if number in _NOT_RUNNING:
        return terminal_not_running()
    if app_label == TERMINAL and number in _NO_SUCH_OBJECT:
        if window_id is None:
            return TabGone(f"{TERMINAL} closed the new window before pao could find it: spawn the agent again")
        return TabGone(
            f"{TERMINAL} window {window_id} was closed (by the user?): the agent is gone; spawn the agent again"
        )
    if number in _TIMED_OUT:
        return TerminalAppError(f"{app_label} did not answer in time (a dialog open?): close its dialogs and retry")
    return TerminalAppError(f"{app_label} refused: {message} (error {number})")
