"""What pao accepts as a topic, and how it quotes user input back in a one-line message."""

from __future__ import annotations

import unicodedata

from pao_core.errors import ValidationError, shown

MAX_TOPIC_CHARS = 2000


def reject_control(text: str, what: str, *, allow_newlines: bool = False) -> str:
    """Raise if ``text`` holds a control character (newline and tab only when allowed)."""
    allowed = {"\n", "\t"} if allow_newlines else set()
    for position, char in enumerate(text):
        if char not in allowed and unicodedata.category(char) == "Cc":
            raise ValidationError(f"{what} holds a control character (U+{ord(char):04X} at position {position})")
    return text


def check_topic(topic: str) -> str:
    """A topic pao will work on: no control character, at most ``MAX_TOPIC_CHARS`` characters."""
    reject_control(topic, "the topic")
    if not topic.strip():
        raise ValidationError("the topic is empty: say what the agent should work on (pao spawn \"fix the login bug\")")
    if len(topic) > MAX_TOPIC_CHARS:
        raise ValidationError(f"the topic is longer than {MAX_TOPIC_CHARS} characters ({len(topic)})")
    return topic


