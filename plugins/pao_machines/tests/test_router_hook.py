"""``pao_command_routers``: a router's exit code replaces the command, ``None`` lets it run here, its
PaoError is the command's one line; pao-machines' own router leaves commands on local agents alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pao_core import hookimpl
from pao_core.cli import main
from pao_core.contracts import CommandRouter
from pao_core.errors import PaoError
from pao_core.plugins import get_plugins, reset_plugins


class Recording(CommandRouter):
    name = "recording"

    def __init__(self, answer: int | None | Exception) -> None:
        self.answer = answer
        self.seen: list[str] = []

    def route(self, args, config):
        self.seen.append(args.command)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@pytest.fixture
def pao_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PAO_HOME", str(tmp_path / "pao"))
    config = tmp_path / "config.toml"
    config.write_text("")
    monkeypatch.setenv("PAO_CONFIG", str(config))
    reset_plugins()
    yield tmp_path
    reset_plugins()


def _with_router(router: CommandRouter) -> None:
    class Plugin:
        @hookimpl
        def pao_command_routers(self, config):
            return [router]

    get_plugins().manager.register(Plugin(), name="test-router")


@pytest.mark.hook("pao_command_routers")
def test_a_router_runs_the_command_or_lets_it_run_here(pao_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    routed = Recording(7)
    _with_router(routed)
    assert main(["status", "nobody"]) == 7 and routed.seen == ["status"]
    routed.answer = None
    assert main(["list", "--json"]) == 0 and json.loads(capsys.readouterr().out) == {"agents": []}
    routed.answer = PaoError("on elsewhere: it went wrong")
    assert main(["send", "x", "hi"]) == 1
    assert capsys.readouterr().err == "pao: on elsewhere: it went wrong\n"


def test_local_agents_are_never_routed(pao_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "nobody"]) == 1
    assert "no agent named 'nobody'" in capsys.readouterr().err
    assert main(["spawn", "fix it", "--on=-bad", "--folder", "x"]) == 2
    assert "is not a machine" in capsys.readouterr().err


def test_without_the_router_another_machine_s_agent_is_refused_never_driven_here(
    pao_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pao_core.plugins import load_config
    from pao_agents.spec import AgentRecord
    from pao_agents.spec import open_registry

    monkeypatch.setenv("PAO_DISABLE_PLUGINS", "pao-machines")
    reset_plugins()
    precious = pao_env / "precious"
    precious.mkdir()
    (precious / "briefing.md").write_text("this machine's own file")
    extra = {"agent_dir": str(precious), "briefing_file": str(precious / "briefing.md"),
             "checkpoint": str(precious / "briefing.md")}
    open_registry(load_config()).add(AgentRecord("far", "/srv/far", "t", "claude-code", "tmux", "pao:%0",
                                                 state="busy", machine="elsewhere", extra=extra))
    for argv in (["send", "far", "hi"], ["kill", "far"], ["pause", "far"], ["resume", "far"], ["checkpoint", "far"]):
        assert main(argv) == 1
        assert "runs on machine elsewhere" in capsys.readouterr().err
    assert main(["status", "far", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["observed"] == {"state": "unknown", "reason": "runs on machine elsewhere"}
    assert main(["kill", "far", "--forget"]) == 0
    assert (precious / "briefing.md").read_text() == "this machine's own file", "another machine's paths were touched"
    assert main(["list", "--json"]) == 0 and json.loads(capsys.readouterr().out)["agents"] == []
