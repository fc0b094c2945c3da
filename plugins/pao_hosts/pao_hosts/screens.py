"""Declarative screen detectors: ordered rules of regular expressions, first match wins."""

from __future__ import annotations

import re
from typing import Sequence

import attrs

from pao_agents.spec import ReadinessDetector
from pao_agents.spec import ScreenState, ScreenVerdict, quoted


def _compile(patterns: Sequence[str]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(pattern, re.MULTILINE) for pattern in patterns)


@attrs.frozen
class ScreenRule:
    """A state the screen is in when every pattern matches somewhere on it."""

    state: ScreenState
    patterns: tuple[re.Pattern[str], ...] = attrs.field(converter=_compile)
    reason: str | None = None
    quote: bool = False
    """Add what the first pattern matched to the reason, quoted (an error's own words)."""

    def matches(self, screen: str) -> bool:
        return all(pattern.search(screen) for pattern in self.patterns)

    def reason_for(self, screen: str) -> str | None:
        found = self.patterns[0].search(screen) if self.quote else None
        return f"{self.reason}: {quoted(found.group())}" if found else self.reason


@attrs.frozen
class RuleDetector(ReadinessDetector):
    """``pao_agents.spec.ReadinessDetector`` from rules tried in order (dialogs first)."""

    name: str
    hosts: tuple[str, ...]
    rules: tuple[ScreenRule, ...]

    def classify(self, screen: str) -> ScreenVerdict | None:
        text = screen.replace("\r", "")
        for rule in self.rules:
            if rule.matches(text):
                return ScreenVerdict(rule.state, rule.reason_for(text), self.name)
        return None
