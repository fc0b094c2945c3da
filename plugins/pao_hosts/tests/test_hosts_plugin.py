"""pao-hosts as pao sees it: three plugins found through the entry points, their profiles, and their order."""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path

import pytest

from pao_agents.spec import host_agents, readiness_detectors
from pao_core.plugins import load_config
from pao_agents.spec import McpWiring
from pao_core.hookspecs import hookimpl
from pao_agents.spec import SpawnRequest
from pao_core.plugins import build_plugins
from pao_hosts.codex import CodexHost
from pao_testing.isolated import run_pao

HOSTS = {"claude-code": "claude", "codex": "codex", "gemini": "gemini"}


def test_pao_plugins_lists_one_plugin_per_cli(tmp_path: Path) -> None:
    done = run_pao(tmp_path, "plugins", "--json", load="pao-hosts")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    rows = {row["name"]: row for row in report["plugins"] if row["distribution"] == "pao-hosts"}
    assert sorted(rows) == sorted(HOSTS)
    for row in rows.values():
        assert row["default"] is False
        assert row["hooks"] == ["pao_config_tables", "pao_host_agents", "pao_readiness_detectors"]
    assert report["failures"] == []


@pytest.mark.hook("pao_host_agents")
def test_each_profile_is_found_and_configured_through_its_table(tmp_path: Path) -> None:
    plugins = build_plugins({"PAO_LOAD_PLUGINS": "pao-hosts"})
    (tmp_path / "config.toml").write_text('[hosts.codex]\ncommand = "/opt/codex"\nargs = ["--profile", "work"]\n')
    config = load_config(environ={"PAO_HOME": str(tmp_path / "home"), "PAO_CONFIG": str(tmp_path / "config.toml")},
                         tables=plugins.config_tables())
    hosts = {host.name: host for host in host_agents(plugins, config)}
    assert sorted(hosts) == sorted(HOSTS)
    request = SpawnRequest(topic="fix the parser", folder=str(tmp_path), name="parser", host="codex")
    command = hosts["codex"].command(request)
    assert command[0] == "/opt/codex" and command[-2:] == ["--profile", "work"]
    assert {d.hosts[0] for d in readiness_detectors(plugins, config) if d.hosts} == set(HOSTS)


def test_another_plugins_profile_of_the_same_name_comes_first(tmp_path: Path) -> None:
    class MyCodex(CodexHost):
        pass

    class Mine:
        @hookimpl
        def pao_host_agents(self, config):
            return [MyCodex()]

    plugins = build_plugins({"PAO_LOAD_PLUGINS": ""})
    plugins.manager.register(Mine(), name="mine")  # before pao-hosts' own
    for module in ("pao_hosts.claude_code", "pao_hosts.codex", "pao_hosts.gemini"):
        plugins.manager.register(importlib.import_module(module), name=module)
    hosts = host_agents(plugins, load_config(environ={"PAO_HOME": str(tmp_path)}))
    assert sorted(host.name for host in hosts) == sorted(HOSTS)
    assert type(next(host for host in hosts if host.name == "codex")) is MyCodex


def test_gemini_gets_a_system_defaults_file_only_where_it_reads_one(tmp_path: Path) -> None:
    """Gemini CLI skips a system-defaults file unless root owns it and every folder above it, none writable by
    group or others: pao wires its MCP server through one only then (tests/test_mcp_realcli.py runs both)."""
    from pao_agents.spec import McpServer
    from pao_hosts.mcp import gemini_refusal, gemini_wiring
    from pao_testing.private import root_private_dir

    server = McpServer("pao", "/usr/bin/python3", ("-m", "pao_core", "mcp"))
    if os.geteuid() != 0:
        assert "only when root owns it" in (gemini_refusal(tmp_path / "agent" / "x.json") or "")
        assert gemini_wiring([server], tmp_path / "agent", {}) == McpWiring()
        return
    below_tmp = tmp_path / "agent"  # /tmp is writable by everyone
    assert "not root's alone" in (gemini_refusal(below_tmp / "x.json") or "")
    assert gemini_wiring([server], below_tmp, {}) == McpWiring()
    with root_private_dir("gemini-") as private:  # root's alone up to /, wherever the checkout is
        assert gemini_refusal(private / "x.json") is None
        wiring = gemini_wiring([server], private, {})
        assert wiring.env == {"GEMINI_CLI_SYSTEM_DEFAULTS_PATH": str(private / "gemini-system-defaults.json")}
        assert json.loads(wiring.files["gemini-system-defaults.json"])["mcpServers"]["pao"]["trust"] is True
