"""The Codex and Gemini CLI detectors read the golden screens captured from the pinned CLIs.

Goldens are real captures (scripts/capture_host_screens.py); each file's expected
verdict is listed here, so a new golden without an expectation fails.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pao_agents.spec import readiness_detectors
from pao_core.plugins import load_config
from pao_core.plugins import build_plugins
from pao_agents.spec import ScreenReader

SCREENS = Path(__file__).parent / "data" / "screens"

EXPECTED = {
    "codex": {
        "starting": ("busy", "loading"),
        "ready": ("ready", None),
        "nudge-pasted": ("unknown", None),
        "working": ("busy", "working"),
        "ready-after-turn": ("ready", None),
        "trust-dialog": ("waiting", "trust the folder"),
        "sign-in": ("blocked", "sign-in"),
    },
    "gemini": {
        "starting": ("busy", "loading its context"),
        "ready": ("ready", None),
        "nudge-pasted": ("unknown", None),
        "working": ("busy", "working"),
        "ready-after-turn": ("ready", None),
        "trust-dialog": ("waiting", "trust the folder"),
        "auth-dialog": ("blocked", "how to sign in"),
        "key-dialog": ("blocked", "GEMINI_API_KEY"),
    },
}


def _reader(host: str) -> ScreenReader:
    config = load_config()
    plugins = build_plugins()
    return ScreenReader.for_host(host, readiness_detectors(plugins, config), plugins)


@pytest.mark.hook("pao_readiness_detectors")
@pytest.mark.parametrize("host", sorted(EXPECTED))
def test_every_golden_has_an_expectation(host: str) -> None:
    assert sorted(p.stem for p in (SCREENS / host).glob("*.txt")) == sorted(EXPECTED[host])


@pytest.mark.hook("pao_readiness_detectors")
@pytest.mark.parametrize(("host", "golden"), [(h, g) for h, goldens in EXPECTED.items() for g in goldens])
def test_golden_screen_verdict(host: str, golden: str) -> None:
    state, reason_part = EXPECTED[host][golden]
    verdict = _reader(host).classify((SCREENS / host / f"{golden}.txt").read_text(encoding="utf-8"))
    assert verdict.state == state
    if reason_part:
        assert reason_part in (verdict.reason or "")
    if state != "unknown":
        assert verdict.detector == f"{host}-screen"


@pytest.mark.parametrize(("host", "other"), [("codex", "gemini"), ("gemini", "codex")])
def test_a_host_detector_ignores_the_other_hosts_screens(host: str, other: str) -> None:
    """The detectors name their host: Codex's reader never judges a Gemini screen, and back."""
    reader = _reader(host)
    assert all(d.name != f"{other}-screen" for d in reader.detectors)
    assert reader.classify((SCREENS / other / "ready.txt").read_text(encoding="utf-8")).state == "unknown"


def test_a_dialog_wins_over_a_ready_looking_prompt() -> None:
    """A trust question drawn over a screen that still shows the composer reads waiting."""
    ready = (SCREENS / "codex" / "ready.txt").read_text(encoding="utf-8")
    dialog = (SCREENS / "codex" / "trust-dialog.txt").read_text(encoding="utf-8")
    assert _reader("codex").classify(ready + dialog).state == "waiting"
