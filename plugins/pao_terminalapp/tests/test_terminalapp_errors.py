"""The Terminal.app driver's failures, against the recording fake of its seam.

Each error a Mac user can meet gives one line that says what to do, and the user's
clipboard is put back whatever failed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pao_core.errors import PaoError, ValidationError
from pao_terminalapp.driver import TerminalAppDriver
from pao_testing.terminalapp import FakeRig, fake_rig

CLIPBOARD_BEFORE = "the user's clipboard"

pytestmark = pytest.mark.usefixtures("private_tmp")


@pytest.fixture
def rig() -> FakeRig:
    return fake_rig()


def test_clipboard_is_restored_when_the_keystroke_is_refused(rig: FakeRig) -> None:
    target = rig.spawned()
    refusal = "System Events got an error: osascript is not allowed assistive access."
    rig.mac.fail_on("System Events.keystroke", -1719, refusal)

    with pytest.raises(PaoError, match=r"Privacy & Security > Accessibility"):
        rig.driver.paste(target, "secret text")

    assert rig.mac.clipboard == CLIPBOARD_BEFORE
    assert rig.mac.calls[-1] == f"clipboard.set({CLIPBOARD_BEFORE!r})"


def test_clipboard_is_restored_when_the_window_cannot_come_to_the_front(rig: FakeRig) -> None:
    target = rig.spawned()
    rig.mac.focus_thief = True

    with pytest.raises(PaoError, match=r"could not bring Terminal.app window 4242 to the front"):
        rig.driver.paste(target, "secret text")

    assert rig.mac.clipboard == CLIPBOARD_BEFORE
    assert not any("keystroke" in call for call in rig.mac.calls)  # nothing typed into another app


def test_clipboard_is_restored_when_the_paste_is_interrupted(rig: FakeRig) -> None:
    target = rig.spawned()

    def interrupted(seconds: float) -> None:
        raise KeyboardInterrupt

    rig.driver.sleep = interrupted
    with pytest.raises(KeyboardInterrupt):
        rig.driver.paste(target, "secret text")
    assert rig.mac.clipboard == CLIPBOARD_BEFORE


def test_a_clipboard_that_cannot_be_restored_is_reported(rig: FakeRig) -> None:
    target = rig.spawned()
    rig.mac.fail_on(f"clipboard.set({CLIPBOARD_BEFORE!r})", -1, "pasteboard busy")

    with pytest.raises(PaoError, match=r"^pasted, but could not restore your clipboard"):
        rig.driver.paste(target, "x")


def test_clipboard_is_untouched_when_the_window_was_closed(rig: FakeRig) -> None:
    target = rig.spawned()
    rig.mac.windows.clear()

    with pytest.raises(PaoError, match=r"window 4242 was closed \(by the user\?\).*spawn the agent again"):
        rig.driver.paste(target, "x")
    assert not any(call.startswith("clipboard") for call in rig.mac.calls)


AUTOMATION = (
    r"^macOS does not let pao control Terminal.app: allow it in System Settings > Privacy & Security > Automation"
)
ACCESSIBILITY = r"^macOS does not let pao send keystrokes: .*Privacy & Security > Accessibility, then retry$"
NOT_RUNNING = r"^Terminal.app is not running \(it was quit\?\): the agent's tab is gone; spawn the agent again$"
CLOSED = r"^Terminal.app window 4242 was closed \(by the user\?\): the agent is gone; spawn the agent again$"


@pytest.mark.parametrize(
    ("fragment", "number", "operation", "expected"),
    [
        ("Terminal.do_script", -1743, "spawn", AUTOMATION),
        ("Terminal.windows", -1743, "read", AUTOMATION),
        ("Terminal.activate", -1743, "press", AUTOMATION),
        ("System Events", -1743, "press", r"^macOS does not let pao control System Events: .*Automation"),
        ("System Events", -1719, "press", ACCESSIBILITY),
        ("System Events", 1002, "paste", ACCESSIBILITY),
        ("Terminal.windows.ID(4242).tabs.tty", -600, "read", NOT_RUNNING),
        ("Terminal.windows.ID(4242).tabs.tty", -609, "is_alive", None),
        ("contents.get", -1728, "read", CLOSED),
        ("processes.get", -1728, "is_alive", None),
        ("contents.get", -1712, "read", r"^Terminal.app did not answer in time \(a dialog open\?\): close its dialogs"),
        ("contents.get", -10000, "read", r"^Terminal.app refused: odd failure \(error -10000\)$"),
        ("Terminal.do_script", -1728, "spawn", r"^Terminal.app closed the new window before pao could find it"),
    ],
)
def test_error_paths_give_one_line_that_says_what_to_do(
    rig: FakeRig, fragment: str, number: int, operation: str, expected: str | None
) -> None:
    target = rig.spawned()
    rig.mac.fail_on(fragment, number, "odd failure")
    call = {
        "spawn": lambda: rig.driver.spawn("api", "/srv/api", ["claude"], {}),
        "read": lambda: rig.driver.read(target),
        "press": lambda: rig.driver.press(target, "Enter"),
        "paste": lambda: rig.driver.paste(target, "x"),
        "is_alive": lambda: rig.driver.is_alive(target),
    }[operation]

    if expected is None:  # a vanished tab or Terminal.app is an answer for is_alive, not an error
        assert call() is False
        return
    with pytest.raises(PaoError, match=expected) as caught:
        call()
    assert "\n" not in str(caught.value)
    assert rig.mac.clipboard == CLIPBOARD_BEFORE


@pytest.mark.parametrize(("open_in", "expected"), [("window", AUTOMATION), ("tab", "to the front")])
def test_a_spawn_that_fails_before_the_line_is_typed_leaves_no_launch_file(
    private_tmp: Path, open_in: str, expected: str
) -> None:
    rig = fake_rig(open_in=open_in)
    rig.mac.new_window()
    rig.mac.focus_thief = True  # tab mode fails here: the window never comes to the front for Cmd-T
    rig.mac.fail_on("Terminal.do_script", -1743, "not allowed")  # window mode fails here
    with pytest.raises(PaoError, match=expected):
        rig.driver.spawn("api", "/srv/api", ["claude"], {"ANTHROPIC_API_KEY": "sk-ant-secret"})
    assert list(private_tmp.iterdir()) == []


def test_read_when_terminal_was_quit_says_so_without_relaunching_it(rig: FakeRig) -> None:
    target = rig.spawned()
    rig.mac.running = False
    with pytest.raises(PaoError, match=NOT_RUNNING):
        rig.driver.read(target)
    assert rig.mac.calls == ["Terminal.isrunning()"]


def test_permission_denied_is_an_error_for_is_alive_not_a_dead_agent(rig: FakeRig) -> None:
    target = rig.spawned()
    rig.mac.fail_on("processes.get", -1743)
    with pytest.raises(PaoError, match=AUTOMATION):
        rig.driver.is_alive(target)


@pytest.mark.parametrize("target", ["", "4242", "4242/1", "4242/1/../../etc", "a/1/ttys003", "4242/1/ttys003;rm"])
def test_bad_targets_are_refused_before_any_call(rig: FakeRig, target: str) -> None:
    for operation in (rig.driver.read, rig.driver.kill, rig.driver.is_alive, lambda t: rig.driver.paste(t, "x")):
        with pytest.raises(ValidationError, match=r"^not a Terminal.app target: .*expected WINDOW-ID/TAB-INDEX/TTY"):
            operation(target)
    assert rig.mac.calls == []


def test_unknown_keys_are_refused_before_any_call(rig: FakeRig) -> None:
    target = rig.spawned()
    with pytest.raises(ValidationError, match=r"^Terminal.app driver cannot press 'F13': use one of Enter"):
        rig.driver.press(target, "F13")
    assert rig.mac.calls == []


def test_an_unavailable_driver_refuses_before_touching_anything(private_tmp: Path) -> None:
    connected = []
    driver = TerminalAppDriver(
        connect=lambda: connected.append(1),  # type: ignore[arg-type,func-returns-value]
        probe=lambda: "Terminal.app needs macOS (this is linux)",
    )
    assert driver.availability() == "Terminal.app needs macOS (this is linux)"
    for operation in (
        lambda: driver.spawn("web", "/work/web", ["claude"], {}),
        lambda: driver.paste("4242/1/ttys003", "x"),
        lambda: driver.press("4242/1/ttys003", "Enter"),
        lambda: driver.read("4242/1/ttys003"),
        lambda: driver.is_alive("4242/1/ttys003"),
        lambda: driver.kill("4242/1/ttys003"),
    ):
        with pytest.raises(PaoError, match=r"^Terminal.app needs macOS \(this is linux\)$"):
            operation()
    assert connected == []
    assert list(private_tmp.iterdir()) == []
