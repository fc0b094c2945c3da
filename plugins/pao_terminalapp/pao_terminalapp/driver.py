"""The Terminal.app terminal driver: spawn, paste, press, read, is_alive, kill.

A target is ``WINDOW-ID/TAB-INDEX/TTY`` (``4242/1/ttys003``): Terminal.app's window
id, the tab's 1-based index when it was opened, and its tty device. The tab is found
again by its tty inside that window, so tabs closing before it do not lose it.

Sending follows the clipboard route: ``paste`` saves the clipboard, puts the text on
it, brings the tab to the front and presses Cmd-V, then restores the clipboard (also
when something failed); ``press`` waits until ``paste_delay`` has passed since that
paste before it sends the key. pao's core checks the screen between the two calls.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any, Callable, ClassVar, Literal, Mapping, Sequence

import attrs

from pao_agents.spec import discard_spec, write_spec
from pao_agents.spec import TerminalDriver
from pao_core.errors import ValidationError
from pao_terminalapp.bridge import (
    SYSTEM_EVENTS,
    TERMINAL,
    MacApps,
    NotRunning,
    TabGone,
    TerminalAppError,
    connect_appscript,
    macos_reason,
    talking_to,
    terminal_not_running,
)
from pao_terminalapp.keys import KeyStroke, key_stroke
from pao_terminalapp.launch import launch_line

_non_negative = attrs.validators.ge(0)


@attrs.frozen
class TerminalAppOptions:
    """``[terminals.terminalapp]`` in the config file."""

    open_in: Literal["window", "tab"] = "window"
    paste_delay: float = attrs.field(default=0.5, validator=_non_negative)
    clipboard_hold: float = attrs.field(default=0.25, validator=_non_negative)
    focus_timeout: float = attrs.field(default=3.0, validator=_non_negative)
    kill_grace: float = attrs.field(default=3.0, validator=_non_negative)
    read: Literal["contents", "history"] = "contents"
    title: bool = True


_TARGET = re.compile(r"(?P<window>[0-9]{1,12})/(?P<tab>[0-9]{1,4})/(?P<tty>[A-Za-z0-9]{1,16}(?:/[0-9]{1,6})?)")


@attrs.frozen
class TabAddress:
    """Where one agent runs: window id, tab index at spawn time, tty name."""

    window_id: int
    tab_index: int
    tty: str

    @classmethod
    def parse(cls, target: str) -> TabAddress:
        match = _TARGET.fullmatch(target)
        if not match:
            raise ValidationError(
                f"not a Terminal.app target: {target!r} (expected WINDOW-ID/TAB-INDEX/TTY, e.g. 4242/1/ttys003)"
            )
        return cls(int(match["window"]), int(match["tab"]), match["tty"])

    @property
    def device(self) -> str:
        return f"/dev/{self.tty}"

    def __str__(self) -> str:
        return f"{self.window_id}/{self.tab_index}/{self.tty}"


@attrs.define
class PasteTimes:
    """When each target last got a paste (``time.monotonic``), shared by the process's drivers."""

    _times: dict[str, float] = attrs.field(factory=dict)
    _lock: threading.Lock = attrs.field(factory=threading.Lock)

    def mark(self, target: str, when: float) -> None:
        with self._lock:
            self._times[target] = when

    def pop(self, target: str) -> float | None:
        with self._lock:
            return self._times.pop(target, None)


# The hook may be called again between paste and press; the delay must survive that.
PASTE_TIMES = PasteTimes()


@attrs.define
class TerminalAppDriver(TerminalDriver):
    """Runs agents in Terminal.app tabs through the :class:`MacApps` seam."""

    name: ClassVar[str] = "terminalapp"

    options: TerminalAppOptions = attrs.field(factory=TerminalAppOptions)
    connect: Callable[[], MacApps] = connect_appscript
    probe: Callable[[], str | None] = macos_reason
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    paste_times: PasteTimes = PASTE_TIMES
    _apps: MacApps | None = attrs.field(default=None, init=False)

    def availability(self) -> str | None:
        return self.probe()

    # -- the contract ------------------------------------------------------------------

    def spawn(self, name: str, folder: str, command: Sequence[str], env: Mapping[str, str]) -> str:
        """Type the launcher's line into a new tab; ``command`` and ``env`` go through its spec file."""
        spec_path = write_spec(command, env)
        try:
            script = launch_line(folder, spec_path)
            apps = self._session()
            with talking_to(TERMINAL):
                tab = self._open(apps, script)
        except BaseException:
            discard_spec(spec_path)  # no shell will run the launcher that deletes it
            raise
        with talking_to(TERMINAL):
            device = tab.tty.get()
            address = self._find(apps, device)
            if self.options.title:
                tab.custom_title.set(f"pao: {name}")
                tab.title_displays_custom_title.set(True)
        return str(address)

    def paste(self, target: str, text: str) -> None:
        address = TabAddress.parse(target)
        apps = self._session()
        window, tab = self._locate(apps, address)
        saved = apps.clipboard.get()
        failed = False
        try:
            apps.clipboard.set(text)
            self._focus(apps, address.window_id, window, tab)
            with talking_to(SYSTEM_EVENTS):
                apps.system_events.keystroke("v", using=apps.keys.command_down)
            self.paste_times.mark(target, self.clock())
            # Terminal.app reads the clipboard when it handles Cmd-V, a moment later.
            self.sleep(self.options.clipboard_hold)
        except BaseException:
            failed = True
            raise
        finally:
            self._restore_clipboard(apps, saved, quiet=failed)

    def press(self, target: str, key: str) -> None:
        address = TabAddress.parse(target)
        stroke = key_stroke(key)
        apps = self._session()
        pasted_at = self.paste_times.pop(target)
        if pasted_at is not None:
            wait = pasted_at + self.options.paste_delay - self.clock()
            if wait > 0:
                self.sleep(wait)
        window, tab = self._locate(apps, address)
        self._focus(apps, address.window_id, window, tab)
        self._send(apps, stroke)

    def read(self, target: str) -> str:
        address = TabAddress.parse(target)
        apps = self._session()
        _, tab = self._locate(apps, address)
        with talking_to(TERMINAL, address.window_id):
            text = getattr(tab, self.options.read).get()
        return text or ""

    def is_alive(self, target: str) -> bool:
        address = TabAddress.parse(target)
        apps = self._session()
        try:
            _, tab = self._locate(apps, address)
            with talking_to(TERMINAL, address.window_id):
                return bool(tab.processes.get())
        except (TabGone, NotRunning):
            return False

    def kill(self, target: str) -> None:
        address = TabAddress.parse(target)
        apps = self._session()
        self.paste_times.pop(target)
        try:
            self._locate(apps, address)
            apps.ttys.end(address.device, self.options.kill_grace)
            # Found again: the profile may have closed the tab when its shell ended, moving the others.
            window, tab = self._locate(apps, address)
            with talking_to(TERMINAL, address.window_id):
                if window.tabs.count() <= 1:
                    window.close()
                    return
            # Terminal.app cannot close one tab by Apple event: Cmd-W, once it is in front and selected.
            self._focus(apps, address.window_id, window, tab)
            with talking_to(TERMINAL, address.window_id):
                if window.selected_tab.tty.get() != address.device:
                    raise TerminalAppError(
                        f"could not select the agent's tab in {TERMINAL} window {address.window_id}: close it by hand"
                    )
            self._send(apps, KeyStroke(char="w", modifier="command_down"))
        except (TabGone, NotRunning):
            return  # already gone

    def attach(self, target: str) -> None:
        """Bring the agent's window and tab to the front."""
        address = TabAddress.parse(target)
        apps = self._session()
        window, tab = self._locate(apps, address)
        self._focus(apps, address.window_id, window, tab)

    # -- steps -------------------------------------------------------------------------

    def _session(self) -> MacApps:
        reason = self.probe()
        if reason:
            raise TerminalAppError(reason)
        if self._apps is None:
            self._apps = self.connect()
        return self._apps

    def _open(self, apps: MacApps, script: str) -> Any:
        """Start ``script`` in a new window, or a new tab of the front window; return the tab."""
        terminal = apps.terminal
        if self.options.open_in == "tab" and terminal.isrunning() and terminal.windows.count() > 0:
            window_id = terminal.windows[1].id.get()
            window = terminal.windows.ID(window_id)
            before = window.tabs.count()
            self._focus(apps, window_id, window, None)
            self._send(apps, KeyStroke(char="t", modifier="command_down"))
            self._wait_for(lambda: window.tabs.count() > before, f"{TERMINAL} did not open a new tab")
            return terminal.do_script(script, in_=window.selected_tab)
        return terminal.do_script(script)

    def _find(self, apps: MacApps, device: str) -> TabAddress:
        """The address of the tab on ``device``, looked up window by window."""
        terminal = apps.terminal
        for window_id in terminal.windows.id.get():
            devices = terminal.windows.ID(window_id).tabs.tty.get()
            if device in devices:
                return TabAddress(window_id, devices.index(device) + 1, device.removeprefix("/dev/"))
        raise TabGone(f"{TERMINAL} closed the new tab on {device} before pao could find it: spawn the agent again")

    def _locate(self, apps: MacApps, address: TabAddress) -> tuple[Any, Any]:
        """The agent's window and tab references, or TabGone/NotRunning saying why not."""
        terminal = apps.terminal
        with talking_to(TERMINAL, address.window_id):
            # Asking a quit Terminal.app anything would launch it again.
            if not terminal.isrunning():
                raise terminal_not_running()
            window = terminal.windows.ID(address.window_id)
            devices = window.tabs.tty.get()
        if address.device not in devices:
            raise TabGone(
                f"the agent's tab ({address.tty}) in {TERMINAL} window {address.window_id} was closed "
                "(by the user?): the agent is gone; spawn the agent again"
            )
        return window, window.tabs[devices.index(address.device) + 1]

    def _focus(self, apps: MacApps, window_id: int, window: Any, tab: Any | None) -> None:
        """Bring the window (and tab) to the front, and wait until keystrokes would reach it."""
        terminal = apps.terminal
        with talking_to(TERMINAL, window_id):
            terminal.activate()
            window.index.set(1)
            if tab is not None:
                window.selected_tab.set(tab)

            def in_front() -> bool:
                return bool(terminal.frontmost.get()) and terminal.windows[1].id.get() == window_id

            self._wait_for(
                in_front,
                f"could not bring {TERMINAL} window {window_id} to the front (another app kept the focus?): "
                "leave the keyboard alone while pao types, then retry",
            )

    def _send(self, apps: MacApps, stroke: KeyStroke) -> None:
        with talking_to(SYSTEM_EVENTS):
            stroke.send(apps.system_events, apps.keys)

    def _wait_for(self, condition: Callable[[], bool], failure: str) -> None:
        deadline = self.clock() + self.options.focus_timeout
        while not condition():
            if self.clock() >= deadline:
                raise TerminalAppError(failure)
            self.sleep(0.05)

    def _restore_clipboard(self, apps: MacApps, saved: str, *, quiet: bool) -> None:
        try:
            apps.clipboard.set(saved)
        except Exception as exc:
            if not quiet:  # when the paste failed, that failure is the one to report
                raise TerminalAppError(f"pasted, but could not restore your clipboard: {exc}") from None
