"""pao-agents as pao sees it: its plugins in `pao plugins`, its commands, and its findings in `pao doctor`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pao_core.plugins import load_config
from pao_core.contracts import Check
from pao_core.doctor import run_checks
from pao_core.hookspecs import hookimpl
from pao_core.plugins import build_plugins
from pao_testing import isolated

PLUGINS = ["agent-checks", "agents", "agents-spec", "registry"]


def run_pao(tmp_path: Path, *args: str, load: str = "pao-agents") -> subprocess.CompletedProcess[str]:
    return isolated.run_pao(tmp_path, *args, load=load)


def test_pao_plugins_lists_the_commands_the_registry_and_the_checks(tmp_path: Path) -> None:
    done = run_pao(tmp_path, "plugins", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    rows = {row["name"]: row for row in report["plugins"] if row["distribution"] == "pao-agents"}
    assert sorted(rows) == PLUGINS
    assert rows["agents"]["hooks"] == ["pao_add_commands", "pao_briefing_deliverers"]
    assert rows["registry"]["hooks"] == ["pao_registry_stores"]
    assert rows["agent-checks"]["hooks"] == ["pao_doctor_checks", "pao_plugin_report"]
    assert rows["agents-spec"]["hooks"] == ["pao_addhooks", "pao_config_tables"]
    assert report["failures"] == []


def test_the_agent_commands_come_and_go_with_the_plugin(tmp_path: Path) -> None:
    assert run_pao(tmp_path, "list", "--json").stdout.strip() == '{\n  "agents": []\n}'
    without = run_pao(tmp_path, "list", load="")
    assert (without.returncode, without.stderr) == (
        1, "pao: 'pao list' is not available: the plugin that provides it (pao-agents) is not loaded: "
        "PAO_LOAD_PLUGINS or PAO_DISABLE_PLUGINS leaves it out\n")
    with_options = run_pao(tmp_path, "list", "--json", "--help", load="")  # the same line, whatever follows
    assert (with_options.returncode, with_options.stderr) == (without.returncode, without.stderr)


@pytest.mark.hook("pao_doctor_checks")
def test_doctor_reports_the_registry_and_a_plugins_own_findings(tmp_path: Path) -> None:
    class Notes:
        @hookimpl
        def pao_doctor_checks(self, config):
            return [Check("store", "notes", "warn", "notes: 3 files unreadable", "fix their permissions"), "not a check"]

    plugins = build_plugins({"PAO_LOAD_PLUGINS": "pao-agents"})
    plugins.manager.register(Notes(), name="notes")
    report = run_checks(load_config(environ={"PAO_HOME": str(tmp_path)}), plugins)
    found = {(check.area, check.name): check for check in report.checks}
    assert found["store", "notes"].line == "notes: 3 files unreadable"
    assert found["registry", "agents.json"].data == {"agents": 0}
    assert ("notes", "pao_doctor_checks") in {(f.plugin, f.stage) for f in plugins.failures}


@pytest.mark.hook("pao_briefing_deliverers")
def test_brief_write_delivers_through_the_first_deliverer(tmp_path: Path) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    none = run_pao(tmp_path, "brief", "fix the parser", "--write", "--folder", str(folder), load="")
    assert none.returncode == 2 and "no installed plugin delivers briefings" in none.stderr
    assert list(folder.iterdir()) == []
    no_host = run_pao(tmp_path, "brief", "fix the parser", "--write", "--folder", str(folder))
    assert no_host.returncode == 1 and "no host agent is installed" in no_host.stderr
    done = run_pao(tmp_path, "brief", "fix the parser", "--write", "--folder", str(folder), "--json",
                   load="pao-agents,pao-hosts")
    assert done.returncode == 1 and "no memory store is configured" in done.stderr  # delivered all the same
    assert json.loads(done.stdout)["delivered"][0]["context_path"] == str(folder / "CLAUDE.md")
    assert "@CONTEXT_BRIEFING.md" in (folder / "CLAUDE.md").read_text()
