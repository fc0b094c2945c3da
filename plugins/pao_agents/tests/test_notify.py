"""pao_agent_state_changed fires once per recorded change; the desktop notifier is off unless configured.

The desktop itself cannot run here: ``notify-send`` and ``osascript`` are small
executables on PATH that record their argv (the seam is the notifier's command line).
"""

from __future__ import annotations

import os
import stat
import types
from pathlib import Path

import pytest

from pao_core.plugins import load_config
from pao_core.errors import ConfigError
from pao_core.hookspecs import hookimpl
from pao_agents.lifecycle import Agents
from pao_agents.spec import AgentRecord
from pao_agents.notify import desktop_command
from pao_core.plugins import build_plugins


def _agents(changes: list[tuple[str, str, str, str]]) -> Agents:
    plugins = build_plugins()
    recorder = types.SimpleNamespace(
        pao_agent_state_changed=hookimpl(lambda record, old_state, new_state, source: changes.append(
            (record.name, old_state, new_state, source)))
    )
    plugins.manager.register(recorder, name="recorder")
    agents = Agents.open(load_config(), plugins)
    agents.registry.add(AgentRecord("api", "/src/api", "fix the login bug", "claude-code", "tmux", "pao:%1"))
    return agents


def _recording_command(folder: Path, name: str) -> Path:
    log = folder / f"{name}.argv"
    script = folder / name
    script.write_text(f'#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done > {log}\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return log


@pytest.mark.hook("pao_agent_state_changed")
def test_the_hook_fires_once_per_change_with_its_source(isolated_home: Path) -> None:
    changes: list[tuple[str, str, str, str]] = []
    agents = _agents(changes)
    agents.set_state("api", "busy", source="spawn")
    agents.set_state("api", "busy", source="screen")  # no change, no event
    record = agents.set_state("api", "waiting", source="events", pid=42)
    assert changes == [("api", "starting", "busy", "spawn"), ("api", "busy", "waiting", "events")]
    assert record.state == "waiting" and record.pid == 42 and agents.registry.get("api").state == "waiting"


def test_an_observation_made_before_a_pause_does_not_overwrite_it(isolated_home: Path) -> None:
    """``pao monitor`` observes in one thread while a key pauses the agent in another: the observation
    ("dead", its window gone) was made from the record before the pause and must not replace ``paused``."""
    from pao_agents.lifecycle import Observation

    changes: list[tuple[str, str, str, str]] = []
    agents = _agents(changes)
    seen = Observation(agents.registry.get("api"), "dead", "its process or terminal is gone", source="screen")
    agents.set_state("api", "paused", source="pause", target="", pid=None)
    assert agents.refresh(seen).state == "paused"
    assert agents.registry.get("api").state == "paused"
    assert changes == [("api", "starting", "paused", "pause")]
    agents.set_state("api", "ready", source="resume")
    current = Observation(agents.registry.get("api"), "busy", None, source="screen")
    agents.set_state("api", "waiting", source="hooks")  # the record changed since "current" was seen
    assert agents.refresh(current).state == "waiting"
    fresh = Observation(agents.registry.get("api"), "busy", None, source="screen")
    assert agents.refresh(fresh).state == "busy"  # an observation of the record as stored is kept


def test_desktop_notifier_is_off_unless_configured(isolated_home: Path, pao_config_file: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = _recording_command(bin_dir, "notify-send")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    changes: list = []
    _agents(changes).set_state("api", "waiting", source="screen")
    assert changes and not log.exists()

    pao_config_file.write_text('[notify]\ndesktop = true\nstates = ["blocked", "dead"]\n')
    agents = Agents.open(load_config(), build_plugins())
    agents.set_state("api", "busy", source="screen")
    assert not log.exists()  # not one of the configured states
    agents.set_state("api", "blocked", source="screen")
    argv = log.read_text().splitlines()
    assert argv == ["--app-name=pao", "--", "pao: api needs you: a dialog or permission prompt",
                    "fix the login bug (/src/api)"]


def test_macos_text_goes_to_osascript_as_arguments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    log = _recording_command(tmp_path, "osascript")
    monkeypatch.setenv("PATH", str(tmp_path))
    hostile = 'x" & do shell script "touch /tmp/owned" & "'
    command = desktop_command("pao: api has finished", hostile, platform="darwin")
    assert command is not None and command[-2:] == ["pao: api has finished", hostile]
    assert all(hostile not in part for part in command[:-1])  # never inside the script's source
    subprocess.run(command, check=True)
    assert log.read_text().splitlines()[-1] == hostile
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert desktop_command("t", "b", platform="linux") is None


def test_a_topic_that_starts_with_a_dash_reaches_notify_send_as_text(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """notify-send parses options anywhere on its line (GLib): the words come after "--", so a topic such as
    "--urgency=critical" is shown, not obeyed (notify-send itself is not installed here: its place is recorded)."""
    _recording_command(tmp_path, "notify-send")
    monkeypatch.setenv("PATH", str(tmp_path))
    command = desktop_command("pao: api has finished", "--urgency=critical (/src/api)", platform="linux")
    assert command is not None and command[-3:] == ["--", "pao: api has finished", "--urgency=critical (/src/api)"]
    assert all(not part.startswith("--urgency") for part in command[:-1])


def test_unknown_states_in_notify_are_a_config_error(pao_config_file: Path) -> None:
    pao_config_file.write_text('[notify]\ndesktop = true\nstates = ["wating"]\n')
    with pytest.raises(ConfigError, match=r"notify\.states: 'wating' not among finished, waiting, failed, dead"):
        load_config()
