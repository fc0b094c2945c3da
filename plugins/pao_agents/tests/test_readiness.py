"""Combining detector verdicts, the poll schedule, and the one-line messages."""

from __future__ import annotations

import attrs
import pytest

from pao_agents.spec import ReadinessDetector
from pao_agents.spec import ScreenVerdict
from pao_core.plugins import build_plugins
from pao_agents.readiness import FIRST_POLL, MAX_POLL, ScreenReader, last_words, next_delay


@attrs.define
class Says(ReadinessDetector):
    state: str | None
    name: str = "says"
    hosts: tuple[str, ...] = ()

    def classify(self, screen: str) -> ScreenVerdict | None:
        return None if self.state is None else ScreenVerdict(self.state, f"{self.name} reason")  # type: ignore[arg-type]


class Broken(ReadinessDetector):
    name = "broken"
    hosts = ()

    def classify(self, screen: str) -> ScreenVerdict | None:
        raise RuntimeError("boom")


@pytest.mark.parametrize(
    ("states", "expected"),
    [
        (["ready", "blocked", "busy"], "blocked"),
        (["ready", "dead", "busy"], "dead"),
        (["dead", "blocked"], "blocked"),
        (["ready", "waiting"], "waiting"),
        (["waiting", "busy", "ready"], "busy"),
        (["ready", None], "ready"),
        ([None, None], "unknown"),
        ([], "unknown"),
    ],
)
def test_blocked_wins_then_busy_waiting_then_ready(states: list[str | None], expected: str) -> None:
    detectors = [Says(state, name=f"d{i}") for i, state in enumerate(states)]
    assert ScreenReader.for_host("x", detectors).classify("screen").state == expected


def test_detectors_for_other_hosts_are_ignored_and_broken_ones_reported() -> None:
    plugins = build_plugins({"PAO_LOAD_PLUGINS": ""})
    reader = ScreenReader.for_host("claude-code", [Says("blocked", hosts=("codex",)), Broken(), Says("ready")], plugins)
    verdict = reader.classify("screen")
    assert (verdict.state, verdict.detector) == ("ready", "says")
    assert [(f.plugin, f.stage, f.error) for f in plugins.failures] == [("broken", "classify", "boom")]


def test_poll_schedule_starts_fast_and_caps() -> None:
    assert next_delay(0) == FIRST_POLL
    assert next_delay(1.0) == pytest.approx(0.05)
    assert next_delay(60) == MAX_POLL
    assert all(next_delay(a) <= next_delay(b) for a, b in zip(range(0, 20), range(1, 21)))


def test_last_words() -> None:
    assert last_words("first\n  Error: nope  \n\n[exited with 1]\n", ("[exited",)) == "Error: nope"
    assert last_words("first\n  Error: nope  \n\n[exited with 1]\n") == "[exited with 1]"
    assert last_words("\n\n") == "(empty screen)"
