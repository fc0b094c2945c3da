"""Key names (tmux style, as host agents give them) to System Events keystrokes."""

from __future__ import annotations

import re
from typing import Any

import attrs

from pao_core.errors import ValidationError

KEY_CODES: dict[str, int] = {
    "Enter": 36,
    "Return": 36,
    "Tab": 48,
    "Space": 49,
    "BSpace": 51,
    "Escape": 53,
    "Left": 123,
    "Right": 124,
    "Down": 125,
    "Up": 126,
}
"""macOS virtual key codes of the named keys."""

_MODIFIED = re.compile(r"(?P<mod>[CM])-(?P<char>[a-z0-9])")
_MODIFIERS = {"C": "control_down", "M": "option_down"}


@attrs.frozen
class KeyStroke:
    """One key: a virtual key code, or a character with a modifier."""

    code: int | None = None
    char: str | None = None
    modifier: str | None = None

    def send(self, system_events: Any, keys: Any) -> None:
        """Send it through System Events (appscript ``key code`` / ``keystroke``)."""
        if self.code is not None:
            system_events.key_code(self.code)
        else:
            system_events.keystroke(self.char, using=getattr(keys, self.modifier or ""))


def key_stroke(key: str) -> KeyStroke:
    """The keystroke for ``key`` (``Enter``, ``Escape``, ``C-c``, ``M-b``...)."""
    if key in KEY_CODES:
        return KeyStroke(code=KEY_CODES[key])
    match = _MODIFIED.fullmatch(key)
    if match:
        return KeyStroke(char=match["char"], modifier=_MODIFIERS[match["mod"]])
    known = ", ".join(KEY_CODES)
    raise ValidationError(f"Terminal.app driver cannot press {key!r}: use one of {known}, C-<letter> or M-<letter>")
