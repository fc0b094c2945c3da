"""The real Claude Code CLI exits (``/exit``): its SessionEnd hook records the agent ``dead`` and notifies at
once, with no ``pao status`` or ``pao monitor`` to look at its terminal.

``pao spawn`` runs in this process with the real pao-tmux driver on a private socket and the pinned CLI against
a loopback stub; ``[notify] command`` is a real executable recording its argv. Runs once per pinned version.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from pao_agents.resolve import AgentContext
from pao_core.cli import main
from pao_core.plugins import load_config, reset_plugins
from pao_testing.anthropic_stub import AnthropicStub
from pao_testing.claude_cli import PrivateTmux
from pao_testing.hostrun import until
from pao_testing.webhook_stub import argv_recorder, recorded_argv

pytestmark = pytest.mark.realcli


def _spawn_api(claude_cli: Path, claude_env: dict[str, str], private_tmux: PrivateTmux, pao_config_file: Path,
               tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> tuple[str, Path]:
    """``api`` spawned with ``[notify] command`` recording its argv, once its first turn ended: its pane, the log."""
    folder = tmp_path / "deploy-tools"
    folder.mkdir()
    script, argv_log = argv_recorder(tmp_path)
    pao_config_file.write_text(f'[notify]\ncommand = ["{script}", "{{name}}", "{{state}}", "{{reason}}"]\ncollapse = 0\n')
    for key, value in claude_env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("PAO_CLAUDE_COMMAND", str(claude_cli))
    monkeypatch.setenv("PAO_TMUX_SOCKET", private_tmux.socket)
    monkeypatch.setenv("PAO_LOAD_PLUGINS", "pao-agents,pao-tmux,pao-hosts")
    reset_plugins()
    try:
        code = main(["spawn", "say hello", "--folder", str(folder), "--name", "api", "--json"])
    finally:
        reset_plugins()
    out, err = capsys.readouterr()
    assert code == 0, err
    spawned = json.loads(out)
    pane = (spawned["record"] if "record" in spawned else spawned)["target"].rpartition(":")[2]  # "SESSION:%N"
    registry = AgentContext.open(load_config()).registry
    until(lambda: registry.get("api").state, lambda state: state == "ready", timeout=90)  # the turn's Stop
    return pane, argv_log


def test_exiting_the_cli_records_dead_and_notifies(
    claude_cli: Path, claude_env: dict[str, str], anthropic_stub: AnthropicStub, private_tmux: PrivateTmux,
    pao_config_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    pane, argv_log = _spawn_api(claude_cli, claude_env, private_tmux, pao_config_file, tmp_path, monkeypatch, capsys)
    registry = AgentContext.open(load_config()).registry
    private_tmux.paste(pane, "/exit")
    private_tmux.wait_for_screen(pane, lambda screen: "/exit" in screen, timeout=10)
    time.sleep(0.5)  # 2.0.77 takes an Enter right after the paste for its command menu, not the command
    private_tmux.press(pane, "Enter")
    until(lambda: registry.get("api").state, lambda state: state == "dead", timeout=30)  # no status, no monitor
    runs = until(lambda: recorded_argv(argv_log), lambda runs: any(run[1] == "dead" for run in runs), timeout=30)
    assert [run for run in runs if run[1] == "dead"] == [["api", "dead", "prompt_input_exit"]]


def test_pausing_records_paused_and_notifies_no_exit(
    claude_cli: Path, claude_env: dict[str, str], anthropic_stub: AnthropicStub, private_tmux: PrivateTmux,
    pao_config_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """``pao pause`` ends the CLI, whose SessionEnd hook then runs pao's recorder: it finds ``paused``, not a death."""
    _, argv_log = _spawn_api(claude_cli, claude_env, private_tmux, pao_config_file, tmp_path, monkeypatch, capsys)
    config = load_config()
    reset_plugins()
    try:
        assert main(["pause", "api"]) == 0, capsys.readouterr().err
    finally:
        reset_plugins()
    log = Path(config.home, "agents", "api", "events.jsonl")
    until(lambda: log.read_text(), lambda text: '"SessionEnd"' in text, timeout=30)  # the CLI reported its exit
    time.sleep(3)  # the recorder that event started has had its time
    assert AgentContext.open(config).registry.get("api").state == "paused"
    assert [run for run in recorded_argv(argv_log) if run[1] == "dead"] == []
