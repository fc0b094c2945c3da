"""The receipt of a prompt pao typed (``pao send``, the spawn's nudge): the CLI's own event for it, retried once."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from pao_agents.agentdir import EVENTS, RECEIPT_TIMEOUT, prompt_receipt, read_events
from pao_agents.conversation import text_marker
from pao_core.topic import reject_control
from pao_core.waiting import poll_until


FIRST_RECEIPT = 2.0
"""Seconds a task pasted and submitted in one step (:func:`submit_at_once`) waits for its receipt before the submit
key is pressed once more (a key that reached the CLI before the paste was taken in)."""


def await_receipt(driver: Any, target: str, submit_key: str, agent_dir: str, text: str, since: float,
                  timeout: float = RECEIPT_TIMEOUT, first: float | None = None) -> float | None:
    """When the CLI reported ``text`` submitted (UserPromptSubmit; Gemini CLI's BeforeAgent), waiting ``first``
    (default ``timeout``); without it the submit key is pressed once more (an empty input ignores it) and the wait
    repeated for ``timeout``; else ``None``."""
    log, fragment = Path(agent_dir, EVENTS), text_marker(text)

    def receipt() -> float | None:
        return prompt_receipt(read_events(log), since, fragment)

    for attempt, bound in enumerate((timeout if first is None else first, timeout)):
        if attempt:  # the CLI said nothing: one more press
            driver.press(target, submit_key)
        received = poll_until(receipt, bound, cap=0.05)
        if received is not None:
            return received
    return None


def submit_at_once(driver: Any, target: str, submit_key: str, extra: dict[str, Any], name: str, text: str,
                   timeout: float = RECEIPT_TIMEOUT, first: float = FIRST_RECEIPT) -> str:
    """The spawn's task pasted and its submit key pressed at once, with no screen read between: the CLI's own
    receipt (its ``extra["events"]``) confirms it instead, as :func:`nudge_receipt` says; when it does not come within
    ``first`` seconds (:data:`FIRST_RECEIPT`), the key is pressed once more."""
    reject_control(text, "the text", allow_newlines=True)
    since = time.time()
    driver.paste(target, text)
    driver.press(target, submit_key)
    return nudge_receipt(driver, target, submit_key, extra, name, text, since, timeout, first)


def nudge_receipt(driver: Any, target: str, submit_key: str, extra: dict[str, Any], name: str, text: str,
                  since: float, timeout: float = RECEIPT_TIMEOUT, first: float | None = None) -> str:
    """The spawn's nudge confirmed like ``pao send``: its receipt in ``extra["nudge_receipt"]`` (``None``: the CLI
    reported none, said on stderr) and the words for the step's line. ``first``: as :func:`await_receipt`'s, for a
    task submitted at once (its screen never read: :func:`submit_at_once`)."""
    if not extra.get("events"):
        return "submitted"
    received = await_receipt(driver, target, submit_key, str(extra["agent_dir"]), text, since, timeout, first)
    extra["nudge_receipt"] = received
    if received is not None:
        return "submitted, confirmed by its CLI"
    seen = "shows its task taken" if first is None else "was given its task"
    print(f"pao: {name} {seen}, but its CLI reported no submitted prompt within "
          f"{timeout + (timeout if first is None else first):g} s (the submit key was pressed again once); "
          f"'pao status {name}' shows its screen", file=sys.stderr)
    return "submitted, NOT confirmed by its CLI"
