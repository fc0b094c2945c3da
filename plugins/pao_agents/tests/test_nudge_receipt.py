"""The spawn's nudge is confirmed like ``pao send``: by the CLI's own UserPromptSubmit event for that text, the
submit key pressed once more when it does not come, and said when it never does. Real tmux on a private socket,
a real ``cat`` in the pane that counts the key presses, the event log as the CLI's hook appends it."""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from pao_core.errors import ValidationError

from pao_agents.receipt import nudge_receipt, submit_at_once

TEXT = "Your task: count the widgets. pao's briefing for it is in your system prompt; use it, then start."


@pytest.fixture
def pane(tmp_path: Path) -> Iterator[tuple[object, str, Path]]:
    import subprocess

    from pao_tmux.driver import TmuxDriver, TmuxOptions

    socket = f"pao-receipt-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    driver = TmuxDriver(TmuxOptions(socket=socket))
    presses = tmp_path / "presses"
    target = driver.spawn("rx", str(tmp_path), ["sh", "-c", f"cat > {presses}"], dict(os.environ))
    try:
        yield driver, target, presses
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)


def write_event(log: Path, prompt: str) -> None:
    with log.open("a") as stream:
        stream.write(json.dumps({"event": {"hook_event_name": "UserPromptSubmit", "prompt": prompt, "session_id": "s"},
                                 "at": int(time.time())}) + "\n")


def _reported_after(tmp_path: Path, submit) -> tuple[str, dict]:
    """``submit(extra)``'s words while the CLI's hook reports the prompt 0.3 s in."""
    log = tmp_path / "events.jsonl"
    log.write_text("")
    extra = {"events": True, "agent_dir": str(tmp_path)}
    hook = threading.Timer(0.3, write_event, (log, TEXT))
    hook.start()
    said = submit(extra)
    hook.join()
    return said, extra


def test_a_nudge_the_cli_reports_is_confirmed(pane, tmp_path: Path) -> None:
    driver, target, _ = pane
    said, extra = _reported_after(tmp_path, lambda extra: nudge_receipt(driver, target, "Enter", extra, "rx", TEXT,
                                                                        time.time(), timeout=5))
    assert said == "submitted, confirmed by its CLI" and extra["nudge_receipt"] is not None


def test_a_nudge_the_cli_never_reports_is_retried_once_then_said(pane, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    driver, target, presses = pane
    log = tmp_path / "events.jsonl"
    write_event(log, "an earlier prompt")  # another prompt is no receipt for this one
    extra = {"events": True, "agent_dir": str(tmp_path)}
    started = time.monotonic()
    said = nudge_receipt(driver, target, "Enter", extra, "rx", TEXT, time.time(), timeout=0.5)
    assert said == "submitted, NOT confirmed by its CLI" and extra["nudge_receipt"] is None
    assert 1.0 <= time.monotonic() - started < 10
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "rx shows its task taken, but its CLI reported no submitted prompt within 1 s" in err
    give_up = time.monotonic() + 5
    while time.monotonic() < give_up and (not presses.exists() or presses.read_text().count("\n") < 1):
        time.sleep(0.05)
    assert presses.read_text().count("\n") == 1  # the submit key pressed once more, once


def test_a_cli_without_events_is_not_waited_for(pane, tmp_path: Path) -> None:
    driver, target, _ = pane
    extra: dict = {"events": None, "agent_dir": str(tmp_path)}
    assert nudge_receipt(driver, target, "Enter", extra, "rx", TEXT, time.time(), timeout=5) == "submitted"
    assert "nudge_receipt" not in extra


class _Blind:
    """The real driver, with its screen unreadable: a task submitted at once must not need it."""

    def __init__(self, driver: object) -> None:
        self.driver = driver

    def paste(self, target: str, text: str) -> None:
        self.driver.paste(target, text)

    def press(self, target: str, key: str) -> None:
        self.driver.press(target, key)

    def read(self, target: str) -> str:
        raise AssertionError("the screen was read")


def _lines(presses: Path, count: int) -> list[str]:
    give_up = time.monotonic() + 5
    while time.monotonic() < give_up and (not presses.exists() or presses.read_text().count("\n") < count):
        time.sleep(0.02)
    return presses.read_text().splitlines()


def test_a_task_submitted_at_once_is_pasted_and_entered_without_reading_the_screen(pane, tmp_path: Path) -> None:
    driver, target, presses = pane
    said, extra = _reported_after(tmp_path, lambda extra: submit_at_once(_Blind(driver), target, "Enter", extra, "rx",
                                                                         TEXT, timeout=5, first=3))
    assert said == "submitted, confirmed by its CLI" and extra["nudge_receipt"] is not None
    assert _lines(presses, 1) == [TEXT]  # the paste, then the key: one line, the text whole


def test_a_task_submitted_at_once_without_a_receipt_gets_one_more_press_then_is_said(
        pane, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    driver, target, presses = pane
    (tmp_path / "events.jsonl").write_text("")
    extra = {"events": True, "agent_dir": str(tmp_path)}
    said = submit_at_once(_Blind(driver), target, "Enter", extra, "rx", TEXT, timeout=0.5, first=0.3)
    assert said == "submitted, NOT confirmed by its CLI" and extra["nudge_receipt"] is None
    assert _lines(presses, 2) == [TEXT, ""]  # the key pressed once more, once
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "rx was given its task, but its CLI reported no submitted prompt within 0.8 s" in err


def test_a_task_submitted_at_once_is_refused_with_control_characters(pane, tmp_path: Path) -> None:
    driver, target, presses = pane
    extra = {"events": True, "agent_dir": str(tmp_path)}
    with pytest.raises(ValidationError):
        submit_at_once(_Blind(driver), target, "Enter", extra, "rx", "go\x1b[201~ rm -rf", timeout=0.5, first=0.3)
    assert not presses.exists() or presses.read_text() == ""


def test_a_prompt_event_of_another_shape_still_confirms_but_another_prompt_does_not(pane, tmp_path: Path) -> None:
    """A CLI version whose UserPromptSubmit carries its text under another name (or not at all) still confirms the
    submit; one that carries another prompt's text does not."""
    driver, target, _ = pane
    log = tmp_path / "events.jsonl"
    extra = {"events": True, "agent_dir": str(tmp_path)}
    log.write_text(json.dumps({"event": {"hook_event_name": "UserPromptSubmit", "prompt": "something else"},
                               "at": int(time.time())}) + "\n")
    assert nudge_receipt(driver, target, "Enter", extra, "rx", TEXT, time.time(), timeout=0.3) == \
        "submitted, NOT confirmed by its CLI"
    with log.open("a") as stream:
        stream.write(json.dumps({"event": {"hook_event_name": "UserPromptSubmit", "user_prompt": [{"text": TEXT}]},
                                 "at": int(time.time())}) + "\n")
    assert nudge_receipt(driver, target, "Enter", extra, "rx", TEXT, time.time() - 1, timeout=2) == \
        "submitted, confirmed by its CLI"
