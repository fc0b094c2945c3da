"""tmux's own line under an exited agent: read as ``dead`` for every host, and kept out of its last words."""

from __future__ import annotations

import attrs
import pytest

from pao_agents.spec import readiness_detectors
from pao_core.plugins import load_config
from pao_agents.spec import ReadinessDetector
from pao_agents.spec import ScreenVerdict
from pao_core.plugins import build_plugins
from pao_agents.spec import ScreenReader, last_words
from pao_tmux.driver import TmuxDriver
from pao_tmux.screens import ExitedPane

EXITED = "> old input box\n\nError: something odd\n\nPane is dead (status 3, Mon Nov 30 01:10:04 2026)\n"


@attrs.frozen
class SeesAnInputBox(ReadinessDetector):
    name: str = "input-box"

    def classify(self, screen: str) -> ScreenVerdict | None:
        return ScreenVerdict("ready") if "> " in screen else None


def test_an_exited_pane_is_dead_with_its_status_and_last_words() -> None:
    verdict = ExitedPane().classify(EXITED)
    assert verdict.state == "dead" and verdict.reason == "the agent exited with status 3: Error: something odd"
    assert ExitedPane().classify("Pane is dead, said the agent\n") is None
    assert ExitedPane().classify("") is None


def test_the_driver_names_its_notice_for_last_words() -> None:
    assert last_words(EXITED, TmuxDriver.screen_notices) == "Error: something odd"


@pytest.mark.hook("pao_readiness_detectors")
def test_the_plugin_contributes_the_detector_for_every_host(tmp_path) -> None:
    plugins = build_plugins({"PAO_LOAD_PLUGINS": "pao-tmux"})
    detectors = readiness_detectors(plugins, load_config(environ={"PAO_HOME": str(tmp_path)}))
    assert [d.name for d in detectors] == ["tmux-exited-pane"]
    # the host's detector still sees the old input box on the dead pane's screen: dead wins
    reader = ScreenReader.for_host("any-host", [SeesAnInputBox(), *detectors])
    assert reader.classify(EXITED).state == "dead"
