"""pao-terminalapp as pao sees it: the entry point, `pao plugins`, options, availability."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pao_core.plugins import load_config
from pao_core.errors import ConfigError
from pao_terminalapp import hooks
from pao_terminalapp.bridge import macos_reason
from pao_terminalapp.driver import TerminalAppOptions



def run_pao(tmp_path: Path, *args: str, config: str = "") -> subprocess.CompletedProcess[str]:
    config_file = tmp_path / "config.toml"
    config_file.write_text(config, encoding="utf-8")
    env = {
        **os.environ,
        "PAO_HOME": str(tmp_path / "home"),
        "HOME": str(tmp_path),
        "PAO_CONFIG": str(config_file),
        "PAO_LOAD_PLUGINS": "pao-terminalapp,pao-agents",  # pao-agents reports the drivers' availability
    }
    env.pop("PAO_DISABLE_PLUGINS", None)
    argv = [sys.executable, "-m", "pao_core", *args]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)


def terminalapp_row(report: dict) -> dict:
    rows = [row for row in report["plugins"] if row["name"] == "terminalapp"]
    assert len(rows) == 1, report
    return rows[0]


def test_pao_plugins_lists_the_driver_as_unavailable_with_the_reason(tmp_path: Path) -> None:
    done = run_pao(tmp_path, "plugins", "--json")

    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    row = terminalapp_row(report)
    assert row["distribution"] == "pao-terminalapp"
    assert row["hooks"] == ["pao_config_tables", "pao_terminal_drivers"]
    assert row["terminal_drivers"] == [
        {"name": "terminalapp", "available": False, "reason": f"Terminal.app needs macOS (this is {sys.platform})"}
    ]
    assert report["failures"] == []


def test_pao_plugins_text_says_why(tmp_path: Path) -> None:
    done = run_pao(tmp_path, "plugins", config='[terminals.terminalapp]\nopen_in = "tab"\npaste_delay = 1.5\n')
    assert done.returncode == 0, done.stderr
    assert f"terminal driver terminalapp: unavailable: Terminal.app needs macOS (this is {sys.platform})" in done.stdout


def test_a_bad_option_is_reported_with_file_and_key(tmp_path: Path) -> None:
    done = run_pao(tmp_path, "plugins", "--json", config='[terminals.terminalapp]\nopen_in = "pane"\n')
    assert done.returncode == 2  # checked at load time, for every command; --json: the error as its one object
    assert json.loads(done.stdout) == {"error": done.stderr.strip().removeprefix("pao: "), "code": 2}
    assert done.stderr.count("\n") == 1 and "config.toml: terminals.terminalapp.open_in: must be one of" in done.stderr


@pytest.mark.hook("pao_terminal_drivers")
def test_options_come_from_the_terminals_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config_file = tmp_path / "config.toml"
    config_file.write_text(
        '[terminals.terminalapp]\nopen_in = "tab"\npaste_delay = 1.25\nread = "history"\ntitle = false\n',
        encoding="utf-8",
    )
    config = load_config({"PAO_CONFIG": str(config_file), "PAO_HOME": str(tmp_path / "home")})

    [driver] = hooks.pao_terminal_drivers(config)

    assert driver.options == TerminalAppOptions(open_in="tab", paste_delay=1.25, read="history", title=False)
    assert TerminalAppOptions().paste_delay == 0.5  # the measured default


def test_a_negative_delay_is_refused(tmp_path: Path) -> None:
    config_file = tmp_path / "config.toml"
    config_file.write_text("[terminals.terminalapp]\npaste_delay = -1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"config.toml: terminals.terminalapp.paste_delay: must be >= 0: -1.0$"):
        load_config({"PAO_CONFIG": str(config_file), "PAO_HOME": str(tmp_path / "home")})


def test_availability_reasons(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert macos_reason("linux") == "Terminal.app needs macOS (this is linux)"
    assert macos_reason("win32") == "Terminal.app needs macOS (this is win32)"
    # appscript does not build off macOS, so it really is missing here.
    assert macos_reason("darwin") == "appscript is not installed: pip install appscript (or reinstall pao-terminalapp)"
    (tmp_path / "appscript").mkdir()
    (tmp_path / "appscript" / "__init__.py").write_text("", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert macos_reason("darwin") is None


def test_importing_pao_core_or_the_hooks_loads_nothing_heavy() -> None:
    code = (
        "import sys, pao_core, pao_core.plugins, pao_terminalapp.hooks; "
        "heavy = {'appscript', 'pao_terminalapp.driver', 'pao_testing.terminalapp'} & set(sys.modules); "
        "print(sorted(heavy))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"
