"""A recording fake of the Mac seam, for tests where Terminal.app cannot run.

:class:`FakeMac` models Terminal.app's windows and tabs and answers the appscript
calls the driver makes (``app.windows.ID(7).tabs.tty.get()``...), System Events
keystrokes (Cmd-T opens a tab, Cmd-V pastes the clipboard, Cmd-W closes the tab, Return
submits), the clipboard and the tty process ender. Every call lands in ``calls`` as
appscript-like text, in order. ``fail`` makes calls whose text contains a key raise an
appscript-style error (``errornumber``/``errormessage``), once or every time.
"""

from __future__ import annotations

import itertools
import types
from typing import Any

import attrs

from pao_terminalapp.bridge import MacApps
from pao_terminalapp.driver import PasteTimes, TerminalAppDriver, TerminalAppOptions

KEYS = types.SimpleNamespace(command_down="command_down", control_down="control_down", option_down="option_down")


class FakeCommandError(Exception):
    """Shaped like appscript's ``CommandError``."""

    def __init__(self, errornumber: int, errormessage: str) -> None:
        super().__init__(f"{errormessage} ({errornumber})")
        self.errornumber = errornumber
        self.errormessage = errormessage


@attrs.define
class FakeTab:
    tty: str
    contents: str = ""
    processes: list[str] = attrs.field(factory=lambda: ["login", "-zsh"])
    custom_title: str = ""
    title_displays_custom_title: bool = False

    @property
    def history(self) -> str:
        return "(scrollback)\n" + self.contents


@attrs.define
class FakeWindow:
    id: int
    tabs: list[FakeTab]
    selected: int = 1


@attrs.define
class _Property:
    owner: Any
    name: str


@attrs.define
class _Collection:
    items: list[Any]
    path: tuple


class _Ref:
    """An appscript-like reference: attribute and index access build a path, commands resolve it."""

    def __init__(self, mac: FakeMac, path: tuple = ()) -> None:
        self._mac = mac
        self._path = path

    def __getattr__(self, name: str) -> _Ref:
        if name.startswith("_"):
            raise AttributeError(name)
        return _Ref(self._mac, self._path + (name,))

    def __getitem__(self, index: int) -> _Ref:
        return _Ref(self._mac, self._path + (("index", index),))

    def ID(self, number: int) -> _Ref:  # noqa: N802 - appscript's spelling
        return _Ref(self._mac, self._path + (("id", number),))

    def __repr__(self) -> str:
        return "app('Terminal')" + _render(self._path)

    def get(self) -> Any:
        return self._mac._command(self, "get()", lambda node: self._mac._get(node))

    def set(self, value: Any) -> None:
        self._mac._command(self, f"set({value!r})", lambda node: self._mac._set(node, value))

    def count(self) -> int:
        return self._mac._command(self, "count()", lambda node: len(node.items))

    def exists(self) -> bool:
        try:
            self._mac._resolve(self._path)
        except FakeCommandError:
            return False
        return True

    def close(self) -> None:
        self._mac._command(self, "close()", lambda node: self._mac.windows.remove(node))


class _Terminal(_Ref):
    def isrunning(self) -> bool:
        self._mac._record("Terminal.isrunning()")
        return self._mac.running

    def activate(self) -> None:
        self._mac._record("Terminal.activate()")
        self._mac.running = True
        self._mac.frontmost = not self._mac.focus_thief

    def do_script(self, script: str, in_: _Ref | None = None) -> _Ref:
        where = "" if in_ is None else f", in_={in_!r}"
        self._mac._record(f"Terminal.do_script({script!r}{where})")
        self._mac.running = True
        if in_ is None:
            tab = self._mac.new_window().tabs[0]
        else:
            tab = self._mac._tab_at(in_._path)
        tab.contents += script + "\n"
        return self._mac.tab_ref(tab)


class _SystemEvents:
    def __init__(self, mac: FakeMac) -> None:
        self._mac = mac

    def keystroke(self, char: str, using: str) -> None:
        self._mac._record(f"System Events.keystroke({char!r}, using={using})")
        self._mac._keystroke(char, using)

    def key_code(self, code: int) -> None:
        self._mac._record(f"System Events.key_code({code})")
        self._mac._keystroke(f"key code {code}", None)


@attrs.define
class _Clipboard:
    mac: FakeMac

    def get(self) -> str:
        self.mac._record("clipboard.get()")
        return self.mac.clipboard

    def set(self, text: str) -> None:
        self.mac._record(f"clipboard.set({text!r})")
        self.mac.clipboard = text


@attrs.define
class _Ttys:
    mac: FakeMac

    def end(self, tty: str, grace: float) -> list[int]:
        self.mac._record(f"ttys.end({tty!r}, grace={grace})")
        for window in self.mac.windows:
            for tab in list(window.tabs):
                if tab.tty == tty:
                    tab.processes = []
                    if self.mac.close_ended_tabs:  # the profile's "When the shell exits: Close"
                        window.tabs.remove(tab)
                        window.selected = 1
        return [4242]


@attrs.define
class FakeMac:
    """Terminal.app, System Events and the clipboard of an imaginary Mac."""

    windows: list[FakeWindow] = attrs.field(factory=list)
    running: bool = True
    frontmost: bool = False
    focus_thief: bool = False
    close_ended_tabs: bool = False
    clipboard: str = "the user's clipboard"
    calls: list[str] = attrs.field(factory=list)
    fail: dict[str, tuple[FakeCommandError, bool]] = attrs.field(factory=dict)
    submitted: list[str] = attrs.field(factory=list)
    _ids: Any = attrs.field(factory=lambda: itertools.count(4242))
    _ttys: Any = attrs.field(factory=lambda: itertools.count(3))

    @property
    def apps(self) -> MacApps:
        return MacApps(
            terminal=_Terminal(self),
            system_events=_SystemEvents(self),
            keys=KEYS,
            clipboard=_Clipboard(self),
            ttys=_Ttys(self),
        )

    def fail_on(self, fragment: str, number: int, message: str = "refused", *, once: bool = False) -> None:
        """Make every call whose text contains ``fragment`` raise error ``number``."""
        self.fail[fragment] = (FakeCommandError(number, message), once)

    def new_window(self) -> FakeWindow:
        window = FakeWindow(next(self._ids), [self.new_tab()])
        self.windows.insert(0, window)
        return window

    def new_tab(self) -> FakeTab:
        return FakeTab(f"/dev/ttys{next(self._ttys):03d}")

    def tab_ref(self, tab: FakeTab) -> _Ref:
        for window in self.windows:
            if tab in window.tabs:
                return _Ref(self, ("windows", ("id", window.id), "tabs", ("index", window.tabs.index(tab) + 1)))
        raise FakeCommandError(-1728, "Can't get tab.")

    # -- machinery ---------------------------------------------------------------------

    def _record(self, call: str) -> None:
        self.calls.append(call)
        for fragment, (error, once) in list(self.fail.items()):
            if fragment in call:
                if once:
                    del self.fail[fragment]
                raise error

    def _command(self, ref: _Ref, command: str, action: Any) -> Any:
        self._record(f"Terminal{_render(ref._path)}.{command}")
        if not self.running:
            raise FakeCommandError(-600, "Application isn't running.")
        return action(self._resolve(ref._path))

    def _resolve(self, path: tuple) -> Any:
        node: Any = _Collection(self.windows, ()) if path[:1] == ("windows",) else _Property(self, path[0])
        for step in path[1:]:
            node = self._step(node, step)
        return node

    def _tab_at(self, path: tuple) -> FakeTab:
        node = self._resolve(path)
        if isinstance(node, _Property) and node.name == "selected_tab":
            return node.owner.tabs[node.owner.selected - 1]
        if not isinstance(node, FakeTab):
            raise FakeCommandError(-1728, "Can't get tab.")
        return node

    def _step(self, node: Any, step: Any) -> Any:
        if isinstance(node, _Property) and node.name == "selected_tab":
            node = node.owner.tabs[node.owner.selected - 1]
        if isinstance(node, _Collection):
            if isinstance(step, tuple) and step[0] == "index":
                if not 1 <= step[1] <= len(node.items):
                    raise FakeCommandError(-1719, "Invalid index.")
                return node.items[step[1] - 1]
            if isinstance(step, tuple) and step[0] == "id":
                for item in node.items:
                    if item.id == step[1]:
                        return item
                raise FakeCommandError(-1728, f"Can't get window id {step[1]}.")
            return _Property(node, step)
        if isinstance(node, FakeWindow):
            if step == "tabs":
                return _Collection(node.tabs, ())
            return _Property(node, step)
        if isinstance(node, FakeTab):
            return _Property(node, step)
        raise FakeCommandError(-1728, f"Can't get {step}.")

    def _get(self, node: Any) -> Any:
        if isinstance(node, _Property) and isinstance(node.owner, _Collection):
            return [getattr(item, node.name) for item in node.owner.items]
        if isinstance(node, _Property) and node.name == "selected_tab":
            return self.tab_ref(node.owner.tabs[node.owner.selected - 1])
        if isinstance(node, _Property):
            return getattr(node.owner, node.name)
        raise FakeCommandError(-1700, "Can't make that into the expected type.")

    def _set(self, node: Any, value: Any) -> None:
        if not isinstance(node, _Property) or isinstance(node.owner, _Collection):
            raise FakeCommandError(-10006, "Can't set that.")
        if node.name == "selected_tab":
            node.owner.selected = node.owner.tabs.index(self._tab_at(value._path)) + 1
        elif node.name == "index" and value == 1:
            self.windows.remove(node.owner)
            self.windows.insert(0, node.owner)
        else:
            setattr(node.owner, node.name, value)

    def _keystroke(self, key: str, using: str | None) -> None:
        if not (self.frontmost and self.windows):
            return  # the keystroke went to some other app
        window = self.windows[0]
        tab = window.tabs[window.selected - 1]
        if (key, using) == ("t", "command_down"):
            window.tabs.append(self.new_tab())
            window.selected = len(window.tabs)
        elif (key, using) == ("v", "command_down"):
            tab.contents += self.clipboard
        elif (key, using) == ("w", "command_down"):
            window.tabs.remove(tab)
            window.selected = 1
            if not window.tabs:
                self.windows.remove(window)
        elif key == "key code 36":
            self.submitted.append(tab.contents)
            tab.contents += "\n"


def _render(path: tuple) -> str:
    text = ""
    for step in path:
        if isinstance(step, tuple):
            text += f"[{step[1]}]" if step[0] == "index" else f".ID({step[1]})"
        else:
            text += f".{step}"
    return text


@attrs.define
class FakeClock:
    """A monotonic clock that only moves when something sleeps; remembers the sleeps."""

    now: float = 1000.0
    sleeps: list[float] = attrs.field(factory=list)

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@attrs.define
class FakeRig:
    """A driver wired to a :class:`FakeMac` and a :class:`FakeClock`."""

    mac: FakeMac
    clock: FakeClock
    driver: TerminalAppDriver

    def spawned(self, name: str = "web") -> str:
        target = self.driver.spawn(name, "/work/web", ["claude"], {})
        self.mac.calls.clear()
        return target

    def log_sleeps(self) -> None:
        """Put the driver's sleeps into the call log, to check what they come before."""

        def sleep(seconds: float) -> None:
            self.mac.calls.append(f"sleep({seconds:.3f})")
            self.clock.sleep(seconds)

        self.driver.sleep = sleep


def fake_rig(**options: Any) -> FakeRig:
    """A :class:`FakeRig` whose driver has these ``TerminalAppOptions``."""
    mac, clock = FakeMac(), FakeClock()
    driver = TerminalAppDriver(
        TerminalAppOptions(**options),
        connect=lambda: mac.apps,
        probe=lambda: None,
        clock=clock,
        sleep=clock.sleep,
        paste_times=PasteTimes(),
    )
    return FakeRig(mac, clock, driver)
