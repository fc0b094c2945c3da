"""Declarative screen detectors: ordered rules of regular expressions, first match wins."""

from __future__ import annotations

import re
from typing import Sequence

import attrs

from pao_agents.spec import ReadinessDetector
from pao_agents.spec import ScreenState, ScreenVerdict


def _compile(patterns: Sequence[str]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(pattern, re.MULTILINE) for pattern in patterns)


@attrs.frozen
class ScreenRule:
    """A state the screen is in when every pattern matches somewhere on it."""

    state: ScreenState
    patterns: tuple[re.Pattern[str], ...] = attrs.field(converter=_compile)
    reason: str | None = None

    def matches(self, screen: str) -> bool:
        return all(pattern.search(screen) for pattern in self.patterns)


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
                return ScreenVerdict(rule.state, rule.reason, self.name)
        return None
