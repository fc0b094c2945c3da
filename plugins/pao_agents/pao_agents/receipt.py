"""The receipt of a prompt pao typed (``pao send``, the spawn's nudge): the CLI's own event for it, retried once."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pao_agents.agentdir import EVENTS, RECEIPT_TIMEOUT, prompt_receipt, read_events
from pao_agents.conversation import text_marker
from pao_core.waiting import poll_until


def await_receipt(driver: Any, target: str, submit_key: str, agent_dir: str, text: str, since: float,
                  timeout: float = RECEIPT_TIMEOUT) -> float | None:
    """When the CLI reported ``text`` submitted (UserPromptSubmit; Gemini CLI's BeforeAgent), waiting ``timeout``;
    without it the submit key is pressed once more (an empty input ignores it) and the wait repeated; else ``None``."""
    log, fragment = Path(agent_dir, EVENTS), text_marker(text)

    def receipt() -> float | None:
        return prompt_receipt(read_events(log), since, fragment)

    for attempt in range(2):
        if attempt:  # the screen said taken, the CLI said nothing: one more press
            driver.press(target, submit_key)
        received = poll_until(receipt, timeout, cap=0.2)
        if received is not None:
            return received
    return None


def nudge_receipt(driver: Any, target: str, submit_key: str, extra: dict[str, Any], name: str, text: str,
                  since: float, timeout: float = RECEIPT_TIMEOUT) -> str:
    """The spawn's nudge confirmed like ``pao send``: its receipt in ``extra["nudge_receipt"]`` (``None``: the CLI
    reported none, said on stderr) and the words for the step's line."""
    if not extra.get("events"):
        return "submitted"
    received = await_receipt(driver, target, submit_key, str(extra["agent_dir"]), text, since, timeout)
    extra["nudge_receipt"] = received
    if received is not None:
        return "submitted, confirmed by its CLI"
    print(f"pao: {name} shows its task taken, but its CLI reported no submitted prompt within "
          f"{2 * timeout:g} s (the submit key was pressed again once); 'pao status {name}' shows its screen",
          file=sys.stderr)
    return "submitted, NOT confirmed by its CLI"
