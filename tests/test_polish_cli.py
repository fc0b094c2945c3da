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
    from pao_core.config import load_config
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
