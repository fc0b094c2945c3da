"""The Terminal.app driver against the recording fake of its seam (Terminal.app needs a Mac).

Each test checks the exact appscript / System Events / clipboard calls the driver makes.
Failures and their messages: test_terminalapp_errors.py.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from pao_agents.spec import TerminalDriver
from pao_agents.spec import LAUNCHER_PATH
from pao_terminalapp.driver import PASTE_TIMES, TerminalAppDriver
from pao_testing.terminalapp import FakeClock, FakeMac, FakeRig, fake_rig

FOCUS = [
    "Terminal.activate()",
    "Terminal.windows.ID(4242).index.set(1)",
    "Terminal.windows.ID(4242).selected_tab.set(app('Terminal').windows.ID(4242).tabs[1])",
    "Terminal.frontmost.get()",
    "Terminal.windows[1].id.get()",
]
LOCATE = ["Terminal.isrunning()", "Terminal.windows.ID(4242).tabs.tty.get()"]
CLIPBOARD_BEFORE = "the user's clipboard"

pytestmark = pytest.mark.usefixtures("private_tmp")


def launched(folder: str, spec_folder: Path) -> tuple[str, dict[str, Any]]:
    """The line that starts the launcher on the one spec in ``spec_folder``, and that spec."""
    (spec,) = spec_folder.iterdir()
    line = f"cd -- {folder} && exec " + shlex.join([sys.executable, "-I", "-S", LAUNCHER_PATH, str(spec)])
    return line, json.loads(spec.read_text(encoding="utf-8"))


@pytest.fixture
def rig() -> FakeRig:
    return fake_rig()


def test_driver_follows_the_contract(rig: FakeRig) -> None:
    assert isinstance(rig.driver, TerminalDriver)
    assert rig.driver.name == "terminalapp"


def test_spawn_opens_a_window_and_returns_its_address(rig: FakeRig, private_tmp: Path) -> None:
    env = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    target = rig.driver.spawn("web", "/work/web", ["claude", "--verbose"], env)

    assert target == "4242/1/ttys003"
    script, spec = launched("/work/web", private_tmp)
    assert spec == {"argv": ["claude", "--verbose"], "env": env}
    assert rig.mac.calls == [
        f"Terminal.do_script({script!r})",
        "Terminal.windows.ID(4242).tabs[1].tty.get()",
        "Terminal.windows.id.get()",
        "Terminal.windows.ID(4242).tabs.tty.get()",
        "Terminal.windows.ID(4242).tabs[1].custom_title.set('pao: web')",
        "Terminal.windows.ID(4242).tabs[1].title_displays_custom_title.set(True)",
    ]
    assert rig.mac.windows[0].tabs[0].custom_title == "pao: web"


def test_spawn_finds_the_new_window_among_others() -> None:
    rig = fake_rig(title=False)
    rig.mac.new_window()
    rig.mac.new_window()
    rig.mac.calls.clear()

    target = rig.driver.spawn("api", "/srv/api", ["claude"], {})

    assert target == "4244/1/ttys005"
    assert rig.mac.calls[-2:] == ["Terminal.windows.id.get()", "Terminal.windows.ID(4244).tabs.tty.get()"]


def test_spawn_in_a_tab_of_the_front_window(private_tmp: Path) -> None:
    rig = fake_rig(open_in="tab")
    rig.mac.new_window()
    rig.mac.calls.clear()

    target = rig.driver.spawn("web", "/work/web", ["claude"], {})

    assert target == "4242/2/ttys004"
    assert rig.mac.calls[:4] == [
        "Terminal.isrunning()",
        "Terminal.windows.count()",
        "Terminal.windows[1].id.get()",
        "Terminal.windows.ID(4242).tabs.count()",
    ]
    assert rig.mac.calls[4:8] == FOCUS[:2] + FOCUS[3:]
    script, _ = launched("/work/web", private_tmp)
    assert rig.mac.calls[8:11] == [
        "System Events.keystroke('t', using=command_down)",
        "Terminal.windows.ID(4242).tabs.count()",
        f"Terminal.do_script({script!r}, in_=app('Terminal').windows.ID(4242).selected_tab)",
    ]
    assert rig.mac.windows[0].tabs[1].contents == script + "\n"
    assert rig.mac.windows[0].tabs[0].contents == ""


def test_spawn_in_tab_mode_opens_a_window_when_none_is_open(private_tmp: Path) -> None:
    rig = fake_rig(open_in="tab")

    assert rig.driver.spawn("web", "/work/web", ["claude"], {}) == "4242/1/ttys003"
    script, _ = launched("/work/web", private_tmp)
    assert rig.mac.calls[:3] == ["Terminal.isrunning()", "Terminal.windows.count()", f"Terminal.do_script({script!r})"]


def test_send_sequence_pastes_through_the_clipboard_and_submits_after_the_delay(
    rig: FakeRig, private_tmp: Path
) -> None:
    target = rig.spawned()
    rig.log_sleeps()

    rig.driver.paste(target, "fix the login bug")
    assert "fix the login bug" in rig.driver.read(target)  # what pao's core polls for
    rig.driver.press(target, "Enter")

    assert rig.mac.calls == [
        *LOCATE,
        "clipboard.get()",
        "clipboard.set('fix the login bug')",
        *FOCUS,
        "System Events.keystroke('v', using=command_down)",
        "sleep(0.250)",
        f"clipboard.set({CLIPBOARD_BEFORE!r})",
        *LOCATE,
        "Terminal.windows.ID(4242).tabs[1].contents.get()",
        "sleep(0.250)",  # the rest of the 0.5 s paste delay
        *LOCATE,
        *FOCUS,
        "System Events.key_code(36)",
    ]
    assert rig.mac.clipboard == CLIPBOARD_BEFORE
    script, _ = launched("/work/web", private_tmp)
    assert rig.mac.submitted == [f"{script}\nfix the login bug"]


def test_press_waits_until_the_configured_delay_has_passed_since_the_paste() -> None:
    rig = fake_rig(paste_delay=2.0, clipboard_hold=0.0)
    target = rig.spawned()
    rig.driver.paste(target, "x")
    rig.clock.sleep(0.5)  # the core polled the screen meanwhile
    rig.clock.sleeps.clear()

    rig.driver.press(target, "Enter")

    assert rig.clock.sleeps[0] == pytest.approx(1.5)
    rig.clock.sleeps.clear()
    rig.driver.press(target, "Enter")  # a second key has no paste to wait for
    assert all(seconds < 0.1 for seconds in rig.clock.sleeps)


def test_press_does_not_wait_when_the_delay_already_passed(rig: FakeRig) -> None:
    target = rig.spawned()
    rig.driver.paste(target, "x")
    rig.clock.sleep(3.0)
    rig.clock.sleeps.clear()

    rig.driver.press(target, "Escape")

    assert rig.clock.sleeps == []
    assert rig.mac.calls[-1] == "System Events.key_code(53)"


def test_the_paste_delay_holds_across_driver_objects() -> None:
    mac, clock = FakeMac(), FakeClock()
    made = [
        TerminalAppDriver(connect=lambda: mac.apps, probe=lambda: None, clock=clock, sleep=clock.sleep)
        for _ in range(2)
    ]
    assert made[0].paste_times is made[1].paste_times is PASTE_TIMES
    target = made[0].spawn("web", "/w", ["claude"], {})
    made[0].paste(target, "x")
    clock.sleeps.clear()

    made[1].press(target, "Enter")

    assert clock.sleeps[0] == pytest.approx(0.25)


@pytest.mark.parametrize(
    ("key", "call"),
    [
        ("Enter", "System Events.key_code(36)"),
        ("Tab", "System Events.key_code(48)"),
        ("Up", "System Events.key_code(126)"),
        ("C-c", "System Events.keystroke('c', using=control_down)"),
        ("M-b", "System Events.keystroke('b', using=option_down)"),
    ],
)
def test_press_sends_named_keys(rig: FakeRig, key: str, call: str) -> None:
    target = rig.spawned()
    rig.driver.press(target, key)
    assert rig.mac.calls == [*LOCATE, *FOCUS, call]


def test_read_returns_the_visible_contents_or_the_history() -> None:
    for option, expected in (("contents", "hello\n"), ("history", "(scrollback)\nhello\n")):
        rig = fake_rig(read=option)
        target = rig.spawned()
        rig.mac.windows[0].tabs[0].contents = "hello\n"
        assert rig.driver.read(target) == expected
        assert rig.mac.calls == [*LOCATE, f"Terminal.windows.ID(4242).tabs[1].{option}.get()"]


def test_attach_brings_the_agents_window_and_tab_forward() -> None:
    rig = fake_rig()
    target = rig.spawned()
    rig.mac.calls.clear()
    rig.driver.attach(target)
    assert rig.mac.calls == [*LOCATE, *FOCUS]
    assert rig.mac.submitted == []  # nothing typed


def test_the_tab_is_found_by_its_tty_after_tabs_before_it_closed(rig: FakeRig) -> None:
    window = rig.mac.new_window()
    window.tabs.append(rig.mac.new_tab())
    target = f"{window.id}/2/{window.tabs[1].tty.removeprefix('/dev/')}"
    window.tabs[1].contents = "mine"
    del window.tabs[0]

    assert rig.driver.read(target) == "mine"
    assert rig.mac.calls[-1] == f"Terminal.windows.ID({window.id}).tabs[1].contents.get()"


def test_is_alive(rig: FakeRig) -> None:
    target = rig.spawned()
    assert rig.driver.is_alive(target) is True
    assert rig.mac.calls == [*LOCATE, "Terminal.windows.ID(4242).tabs[1].processes.get()"]

    rig.mac.windows[0].tabs[0].processes = []  # the agent exited; "[Process completed]"
    assert rig.driver.is_alive(target) is False


def test_is_alive_is_false_when_the_tab_or_window_is_gone(rig: FakeRig) -> None:
    target = rig.spawned()
    rig.mac.windows[0].tabs.append(rig.mac.new_tab())
    del rig.mac.windows[0].tabs[0]
    assert rig.driver.is_alive(target) is False
    rig.mac.windows.clear()
    assert rig.driver.is_alive(target) is False


def test_is_alive_does_not_relaunch_a_quit_terminal(rig: FakeRig) -> None:
    target = rig.spawned()
    rig.mac.running = False
    assert rig.driver.is_alive(target) is False
    assert rig.mac.calls == ["Terminal.isrunning()"]
    assert rig.mac.running is False


def test_kill_ends_the_processes_then_closes_a_one_tab_window(rig: FakeRig) -> None:
    target = rig.spawned()
    rig.driver.kill(target)
    assert rig.mac.calls == [
        *LOCATE,
        "ttys.end('/dev/ttys003', grace=3.0)",
        *LOCATE,
        "Terminal.windows.ID(4242).tabs.count()",
        "Terminal.windows.ID(4242).close()",
    ]
    assert rig.mac.windows == []


def test_kill_closes_only_its_own_tab_in_a_shared_window() -> None:
    rig = fake_rig(open_in="tab")
    user_window = rig.mac.new_window()
    user_window.tabs[0].contents = "the user's work"
    target = rig.spawned()
    user_window.selected = 1  # the user clicked back to their tab

    rig.driver.kill(target)

    assert rig.mac.calls == [
        *LOCATE,
        "ttys.end('/dev/ttys004', grace=3.0)",
        *LOCATE,
        "Terminal.windows.ID(4242).tabs.count()",
        "Terminal.activate()",
        "Terminal.windows.ID(4242).index.set(1)",
        "Terminal.windows.ID(4242).selected_tab.set(app('Terminal').windows.ID(4242).tabs[2])",
        "Terminal.frontmost.get()",
        "Terminal.windows[1].id.get()",
        "Terminal.windows.ID(4242).selected_tab.tty.get()",
        "System Events.keystroke('w', using=command_down)",
    ]
    assert [tab.contents for tab in user_window.tabs] == ["the user's work"]


def test_kill_leaves_the_other_tabs_when_the_profile_already_closed_the_agents() -> None:
    rig = fake_rig(open_in="tab")
    user_window = rig.mac.new_window()
    target = rig.spawned()
    rig.mac.close_ended_tabs = True

    rig.driver.kill(target)

    assert rig.mac.calls[-2:] == ["Terminal.isrunning()", "Terminal.windows.ID(4242).tabs.tty.get()"]
    assert len(user_window.tabs) == 1


def test_kill_of_a_gone_agent_does_nothing(rig: FakeRig) -> None:
    target = rig.spawned()
    rig.mac.windows.clear()
    rig.driver.kill(target)
    rig.mac.running = False
    rig.driver.kill(target)
    assert not any(call.startswith("ttys") for call in rig.mac.calls)
