"""``pao list`` with no agent answers before any plugin loads, and gives way to the full command whenever
the answer could differ (a changed or broken configuration, an agent, another registry, another plugin)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from test_plugin_index import imported, run, site  # noqa: F401  (site: a fixture)
from test_plugins import install_module_plugin

HEAVY = {"pluggy", "attrs", "cattrs", "pao_core.plugins", "pao_core.config", "pao_core.models",
         "pao_machines.route", "pao_machines.ssh", "pao_agents.registry", "pao_agents.lifecycle"}
"""What the full ``pao list`` imports (the plugin host, records, configuration checks, the router)."""

STORE_PLUGIN = '''
from pao_core import hookimpl


@hookimpl
def pao_registry_stores(config):
    return []
'''


def said(result) -> str:
    return "".join(line + "\n" for line in result.stderr.splitlines() if not line.startswith("MODULES "))


def light(*args: str, env: dict[str, str] | None = None) -> bool:
    """Whether ``pao ARGS`` answered without the plugin host (and answered as the full command does)."""
    return not HEAVY & imported(run(*args, env=env))


def test_list_with_no_agent_imports_no_plugin_host_and_prints_what_the_full_command_prints() -> None:
    full = [run("list"), run("list", "--json")]  # a complete load writes the index; the next full list checks the config
    assert all(result.returncode == 0 for result in full), [said(result) for result in full]
    assert {"pluggy", "attrs", "cattrs", "pao_core.config", "pao_agents.lifecycle"} <= imported(full[0])
    for args, reference in ((["list"], full[0]), (["list", "--json"], full[1])):
        answer = run(*args)
        assert (answer.returncode, answer.stdout, said(answer)) == (0, reference.stdout, "")
        assert not HEAVY & imported(answer), HEAVY & imported(answer)
    assert run("list", "--json").stdout == '{\n  "agents": []\n}\n'


def test_a_configuration_error_is_still_said_and_a_fixed_file_is_checked_again(pao_config_file: Path) -> None:
    run("list")
    run("list")
    assert light("list")
    pao_config_file.write_text("[briefing]\nmax_items = -3\n")
    for _ in range(2):
        broken = run("list")
        assert (broken.returncode, broken.stdout) == (2, "")
        assert said(broken).startswith(f"pao: {pao_config_file}: briefing.max_items: must be at least 1")
    pao_config_file.write_text("[briefing]\nmax_items = 3\n")
    assert not light("list")  # checked in full once
    assert light("list")
    assert not light("list", env={"PAO_POSTGRES_URL": "postgresql://db/memory"})  # what the check reads changed


def test_agents_another_registry_or_other_arguments_take_the_full_command() -> None:
    run("list")
    run("list")
    assert light("list")
    for args in (["list", "--help"], ["list", "--jso"], ["list", "extra"]):
        assert not light(*args)
    elsewhere = run("list", env={"PAO_REGISTRY_URL": "nosuch://host/db"})
    assert elsewhere.returncode == 2 and "no installed plugin keeps a registry there" in said(elsewhere)
    now = "2026-11-30T10:00:00+00:00"
    record = {"name": "api", "folder": "/srv/api", "topic": "fix it", "host": "claude-code", "terminal": "tmux",
              "target": "", "machine": "", "state": "paused", "created_at": now, "updated_at": now, "extra": {}}
    Path(os.environ["PAO_HOME"], "agents.json").write_text(json.dumps({"version": 1, "agents": {"api": record}}))
    listed = run("list")
    assert listed.returncode == 0 and "api" in listed.stdout and "paused" in listed.stdout
    assert "pluggy" in imported(listed)
    assert not {"pao_machines.ssh", "pao_machines.route"} & imported(listed)  # ssh only for agents elsewhere


def test_another_plugin_that_keeps_registries_takes_the_full_command(site: Path, tmp_path: Path) -> None:  # noqa: F811
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH", "")]))}
    run("list", env=env)
    run("list", env=env)
    assert light("list", env=env)
    install_module_plugin(tmp_path / "pao-store-src", site, "store", STORE_PLUGIN)
    for _ in range(3):
        result = run("list", env=env)
        assert result.returncode == 0 and "pluggy" in imported(result), said(result)
