"""The screen conversation with an agent: paste text, see it shown, submit it, confirm it was taken.

Used by ``pao spawn`` (the task, for hosts that take no first prompt) and by ``pao send``
and ``broadcast``. Nothing here sleeps for a fixed time where the screen can confirm.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from pao_agents.readiness import ScreenReader, wait_for
from pao_core.errors import PaoError, ValidationError
from pao_core.topic import reject_control

if TYPE_CHECKING:
    from pao_agents.spec.contracts import TerminalDriver

PASTE_TIMEOUT = 10.0
SUBMIT_TIMEOUT = 3.0
# A terminal UI draws a paste over several frames, and Gemini CLI reads an Enter that comes close behind a paste as a
# newline in its input: the key is pressed once the screen has stood still this long (a spinner never stands still:
# at most SETTLE_WAIT).
SETTLE = 0.1
SETTLE_WAIT = 0.5
PLACEHOLDER = "[Pasted text #"
_MARKER_CHARS = 24


class SendFailed(PaoError):
    """The agent did not show or did not take the text pao sent."""


def _squash(text: str) -> str:
    """Text without any whitespace: immune to line wrapping and NO-BREAK SPACEs."""
    return "".join(text.split())


def text_marker(text: str) -> str:
    """The tail of ``text``'s last line, whitespace removed: what shows that the text arrived."""
    lines = [line for line in text.splitlines() if line.strip()]
    return _squash(lines[-1])[-_MARKER_CHARS:] if lines else ""


def _chars_after(screen: str, marker: str) -> int | None:
    """How much (whitespace-free) screen follows the last occurrence of ``marker``."""
    flat = _squash(screen)
    index = flat.rfind(marker) if marker else -1
    return None if index < 0 else len(flat) - index - len(marker)


def _settled(driver: TerminalDriver, target: str, screen: str, timeout: float) -> str:
    """The screen once it has stood still for ``SETTLE`` (as last read, at ``timeout``)."""
    last = [screen, time.monotonic()]

    def still(now_screen: str) -> bool:
        if now_screen != last[0]:
            last[:] = [now_screen, time.monotonic()]
        return time.monotonic() - last[1] >= SETTLE

    return wait_for(driver, target, still, timeout) or last[0]


def send_text(
    driver: TerminalDriver,
    target: str,
    text: str,
    *,
    submit_key: str,
    reader: ScreenReader,
    name: str = "agent",
    paste_timeout: float = PASTE_TIMEOUT,
    submit_timeout: float = SUBMIT_TIMEOUT,
) -> None:
    """Paste ``text``, wait until the input shows it, press the submit key, confirm it was taken.

    Shown: one more occurrence of the text's tail (or of a ``[Pasted text #N``
    placeholder) than before the paste, on a screen that has stopped changing. Taken: an
    idle agent starts showing activity (busy or waiting), or the text left the input (it
    vanished or moved up, away from the bottom). The key is pressed a second time, once,
    if the first press changed nothing.
    """
    reject_control(text, "the text", allow_newlines=True)
    if not text.strip():
        raise ValidationError("nothing to send: the text is empty")
    marker = text_marker(text)
    before = _squash(driver.read(target))
    shown_count, placeholders = before.count(marker), before.count(_squash(PLACEHOLDER))

    def is_shown(screen: str) -> bool:
        flat = _squash(screen)
        return flat.count(marker) > shown_count or flat.count(_squash(PLACEHOLDER)) > placeholders

    driver.paste(target, text)
    shown = wait_for(driver, target, is_shown, paste_timeout)
    if shown is None:
        raise SendFailed(f"{name} did not show the pasted text within {paste_timeout:.0f} s; nothing was submitted")
    settled = _settled(driver, target, shown, min(paste_timeout, SETTLE_WAIT))
    shown = settled if is_shown(settled) else shown
    probe = marker if marker in _squash(shown) else _squash(PLACEHOLDER)
    position = _chars_after(shown, probe)
    active = ("busy", "waiting")
    # activity proves the submission only when the agent was idle before the key press
    idle_before = reader.classify(shown).state not in active

    def is_taken(screen: str) -> bool:
        if screen == shown:
            return False
        if idle_before and reader.classify(screen).state in active:
            return True
        now = _chars_after(screen, probe)
        return now is None or (position is not None and now > position)

    for _attempt in range(2):
        driver.press(target, submit_key)
        if wait_for(driver, target, is_taken, submit_timeout) is not None:
            return
    raise SendFailed(f"{name} did not take the text: {submit_key} was pressed twice and the input still holds it")
