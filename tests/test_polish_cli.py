"""Everyday polish of the command line: ``--json`` failures on stdout, strict configuration values, "did you
mean", an empty topic refused, shell completion. Real plugins, real parser, no stand-ins."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from pao_core.cli import build_parser, main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def json_commands() -> list[list[str]]:
    """Every command (and subcommand) of the installed plugins that takes ``--json``, as its words."""
    from pao_core.plugins import load_config
    from pao_core.plugins import get_plugins

    plugins = get_plugins()
    parser = build_parser(load_config(), plugins)
    found: list[list[str]] = []

    def walk(current: argparse.ArgumentParser, words: list[str]) -> None:
        if any("--json" in action.option_strings for action in current._actions):
            found.append(words)
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                seen: set[int] = set()
                for name, sub in action.choices.items():
                    if id(sub) not in seen:  # an alias is the same parser
                        seen.add(id(sub))
                        walk(sub, [*words, name])

    walk(parser, [])
    return found


def test_every_json_command_fails_with_one_json_object_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    commands = json_commands()
    assert len(commands) >= 15 and ["list"] in commands and ["doctor"] in commands and ["brief"] in commands
    for words in commands:
        code, out, err = run(capsys, *words, "--json", "--no-such-option")
        assert code == 2, (words, out, err)
        assert out.count("\n") == 1, (words, out)
        answer = json.loads(out)
        assert answer["code"] == 2 and answer["error"] == err.removeprefix("pao: ").strip(), (words, answer)
        assert err.startswith("pao: ") and err.count("\n") == 1


def test_a_runtime_failure_with_json_is_an_object_too(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "status", "nobody-here", "--json")
    assert code == 1 and json.loads(out) == {"error": err.removeprefix("pao: ").strip(), "code": 1}
    code, out, _ = run(capsys, "status", "nobody-here")
    assert code == 1 and out == ""  # without --json stdout stays empty


def test_a_configuration_error_with_json_is_an_object(pao_config_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pao_config_file.write_text("[briefing]\nmax_items = -3\n")
    code, out, _ = run(capsys, "list", "--json")
    answer = json.loads(out)
    assert code == 2 and answer["code"] == 2 and "briefing.max_items" in answer["error"]
    code, out, _ = run(capsys, "brief", "--", "--json")  # a topic that reads --json is not the option
    assert code == 2 and out == ""


@pytest.mark.parametrize(("table", "line", "says"), [
    ("notify", 'desktop = "no"', "notify.desktop: must be a boolean (true or false, unquoted), not 'no'"),
    ("spawn", 'nudge = "false"', "spawn.nudge: must be a boolean (true or false, unquoted), not 'false'"),
    ("gather", 'limit = "5"', "gather.limit: must be an integer (a whole number, unquoted), not '5'"),
    ("gather", "limit = 5.5", "gather.limit: must be an integer (a whole number, unquoted), not 5.5"),
    ("gather", 'deadline = "2"', "gather.deadline: must be a float (a number, unquoted), not '2'"),
    ("backends.longterm", "warm_searcher = 1", "backends.longterm.warm_searcher: must be a boolean"),
    ("notify", 'command = "notify-send"', "notify.command: must be a list ([...]), not 'notify-send'"),
    ("notify", 'states = "failed"', "notify.states: must be a list ([...]), not 'failed'"),
])
def test_quoted_booleans_and_numbers_are_refused_naming_key_and_file(
        pao_config_file: Path, capsys: pytest.CaptureFixture[str], table: str, line: str, says: str) -> None:
    pao_config_file.write_text(f"[{table}]\n{line}\n")
    code, out, err = run(capsys, "status", "nobody")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"pao: {pao_config_file}: {says}"), err


def test_real_booleans_and_numbers_still_read(pao_config_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pao_core.plugins import load_config

    from pao_agents.spec.options import notify_options

    pao_config_file.write_text("[gather]\ndeadline = 3\nlimit = 7\n[notify]\ndesktop = false\n"
                               'command = ["notify-send", "{name}"]\nstates = []\n[spawn]\nnudge = false\n')
    config = load_config()
    assert config.gather.deadline == 3.0 and isinstance(config.gather.deadline, float) and config.gather.limit == 7
    assert config.tables["notify"]["desktop"] is False
    assert notify_options(config).command == ("notify-send", "{name}") and notify_options(config).states == ()


def test_a_mistyped_command_gets_a_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "lst")
    assert code == 2 and err.rstrip().endswith("did you mean 'list'?") and err.count("\n") == 1
    code, _, err = run(capsys, "memory", "imprt")
    assert code == 2 and err.rstrip().endswith("did you mean 'import'?")
    code, _, err = run(capsys, "xyzzy")
    assert code == 2 and "did you mean" not in err


def test_a_mistyped_agent_name_gets_a_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    from pao_agents.spec import AgentRecord, Agents
    from pao_core.plugins import load_config

    registry = Agents.open(load_config()).registry
    for name in ("billing-api", "frontend", "fix-invoice-rounding-bug"):
        registry.add(AgentRecord(name, "/tmp", "a topic", "claude-code", "tmux", target="", machine=""))
    code, _, err = run(capsys, "status", "biling-api")
    assert code == 1 and err.rstrip().endswith("did you mean 'billing-api'?"), err
    code, _, err = run(capsys, "pause", "frontnd")
    assert code == 1 and err.rstrip().endswith("did you mean 'frontend'?"), err
    code, _, err = run(capsys, "kill", "fix")  # the start of a long name made from a topic's words
    assert code == 1 and err.rstrip().endswith("did you mean 'fix-invoice-rounding-bug'?"), err
    code, _, err = run(capsys, "status", "zzzzzz")
    assert code == 1 and "did you mean" not in err


@pytest.mark.parametrize("command", ["brief", "spawn"])
@pytest.mark.parametrize("topic", ["", "   ", "\t"])
def test_an_empty_topic_is_refused_before_anything_starts(capsys: pytest.CaptureFixture[str], isolated_home: Path,
                                                          command: str, topic: str) -> None:
    code, out, err = run(capsys, command, "--", topic)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "topic is empty" in err or "control character" in err, err
    from pao_agents.spec import Agents
    from pao_core.plugins import load_config

    assert Agents.open(load_config()).registry.list() == []  # nothing reserved, nothing started


def complete(line: str, tmp_path: Path) -> set[str]:
    """What the shell would offer after ``line``: the installed ``pao`` run as argcomplete's script runs it."""
    import os
    import subprocess
    import sys

    answer = tmp_path / "completions"
    env = {**os.environ, "_ARGCOMPLETE": "1", "_ARGCOMPLETE_IFS": "\n", "COMP_LINE": line,
           "COMP_POINT": str(len(line)), "_ARGCOMPLETE_STDOUT_FILENAME": str(answer)}
    done = subprocess.run([str(Path(sys.executable).with_name("pao"))], env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60, check=True)
    assert "Traceback" not in done.stderr
    return {word.strip() for word in answer.read_text().split("\n") if word.strip()}


def test_shell_completion_offers_every_plugins_commands_and_options(tmp_path: Path) -> None:
    assert "list" in complete("pao li", tmp_path)
    assert {"import", "init"} <= complete("pao memory i", tmp_path)
    assert "--no-nudge" in complete("pao spawn --no-n", tmp_path)


def test_shell_completion_offers_the_registrys_agent_names(tmp_path: Path) -> None:
    from pao_agents.spec import AgentRecord, JsonRegistry
    from pao_core.paths import home_path

    registry = JsonRegistry(home_path())
    for name in ("alpha", "beta"):
        registry.add(AgentRecord(name=name, folder=str(tmp_path), topic="t", host="fake", terminal="tmux", target=""))

    def names(line: str) -> set[str]:
        return {word for word in complete(line, tmp_path) if not word.startswith("-")}  # kill's options come too

    for command in ("kill", "send", "attach", "diff", "finish", "status", "pause", "resume", "checkpoint"):
        assert names(f"pao {command} ") == {"alpha", "beta"}, command
    assert names("pao finish al") == {"alpha"}
    assert names("pao kill alpha ") == {"alpha", "beta"}  # kill takes several
    registry.path.write_text("{not json")  # an unreadable registry completes nothing, says nothing
    assert names("pao kill ") == set()


def test_shell_completion_offers_a_postgresql_registry_s_names_within_its_deadline(tmp_path: Path,
                                                                                  pao_config_file: Path) -> None:
    """With ``[registry] url`` naming PostgreSQL, the names another machine registered there come too; a server that
    never answers costs the TAB at most the deadline, and offers this machine's names alone, silently."""
    import socket
    import time

    from pao_agents.namecompletion import SHARED_DEADLINE
    from pao_agents.spec import AgentRecord, JsonRegistry
    from pao_core.paths import home_path
    from pao_postgres.registry import CONNECT_TIMEOUT, PostgresRegistry
    from pao_testing.postgres import postgres_url

    JsonRegistry(home_path()).add(AgentRecord("local", str(tmp_path), "t", "fake", "tmux", ""))
    with postgres_url() as url:
        PostgresRegistry(url, "beta").add(AgentRecord("remote", str(tmp_path), "t", "fake", "tmux", ""))
        pao_config_file.write_text(f'[registry]\nurl = "{url}"\n')
        assert {word for word in complete("pao kill ", tmp_path) if not word.startswith("-")} == {"local", "remote"}
    with socket.socket() as silent:  # accepts connections (the kernel's backlog) and never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        pao_config_file.write_text(f'[registry]\nurl = "postgresql://pao@127.0.0.1:{silent.getsockname()[1]}/pao"\n')
        started = time.monotonic()
        offered = {word for word in complete("pao kill ", tmp_path) if not word.startswith("-")}
        took = time.monotonic() - started
    assert offered == {"local"}
    assert took < CONNECT_TIMEOUT and SHARED_DEADLINE < CONNECT_TIMEOUT, took  # the deadline, not libpq's wait


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_pao_completion_prints_the_script_for_the_shell(capsys: pytest.CaptureFixture[str], shell: str) -> None:
    code, out, err = run(capsys, "completion", shell)
    assert code == 0 and err == "" and "_ARGCOMPLETE" in out and "pao" in out
    if shell == "fish":
        assert "complete " in out and "commandline" in out
