"""``pao list`` answers before any plugin loads, with the full command's very output (live, dead, waiting and
paused agents in real tmux on a private socket, plain and ``--json``), and gives way to the full command
whenever the answer could differ (a changed or broken configuration, a record it does not know, an agent
elsewhere or in another terminal, another registry, another plugin)."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import time
import typing
import uuid
from pathlib import Path

import attrs
import pytest

from pao_agents import light as light_path
from pao_agents.registry import JsonRegistry
from pao_agents.spec import AgentRecord
from pao_core.paths import cache_path
from pao_testing.claude_cli import PrivateTmux
from pao_testing.installed import imported, install_module_plugin, run, site  # noqa: F401  (site: a fixture)

HEAVY = {"pluggy", "attrs", "cattrs", "pao_core.plugins", "pao_core.config", "pao_core.models", "libtmux",
         "pao_machines.route", "pao_machines.ssh", "pao_agents.registry", "pao_agents.lifecycle", "pao_tmux.driver"}
"""What the full ``pao list`` imports (the plugin host, records, configuration checks, the router)."""

STORE_PLUGIN = '''
from pao_core import hookimpl


@hookimpl
def pao_registry_stores(config):
    return []
'''

DRIVER_PLUGIN = STORE_PLUGIN.replace("pao_registry_stores", "pao_terminal_drivers")
"""A plugin with terminal drivers of its own (none here): which driver runs an agent is its business then."""


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
        assert said(broken).startswith(f"pao: {pao_config_file}: briefing.max_items: must be >= 1: -3")
    pao_config_file.write_text("[briefing]\nmax_items = 3\n")
    assert not light("list")  # checked in full once
    assert light("list")
    assert not light("list", env={"PAO_POSTGRES_URL": "postgresql://db/memory"})  # what the check reads changed


def test_another_registry_other_arguments_or_an_older_record_take_the_full_command() -> None:
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
    for _ in range(2):  # a record without its machine (written before records had one) reads back changed
        listed = run("list")
        assert listed.returncode == 0 and "api" in listed.stdout and "paused" in listed.stdout
        assert "pluggy" in imported(listed)
    assert not {"pao_machines.ssh", "pao_machines.route"} & imported(listed)  # ssh only for agents elsewhere


@pytest.mark.parametrize("plugin", ["store", "drivers"])
def test_another_plugin_that_keeps_registries_or_drives_terminals_takes_the_full_command(
        site: Path, tmp_path: Path, tmux_socket: str, plugin: str) -> None:  # noqa: F811
    _register([_agent("api", f"{tmux_socket}:{_pane(tmux_socket, 'sleep 600')}")])
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH", "")]))}
    run("list", env=env)
    run("list", env=env)
    assert light("list", env=env)
    install_module_plugin(tmp_path / f"pao-{plugin}-src", site, plugin, {"store": STORE_PLUGIN, "drivers": DRIVER_PLUGIN}[plugin])
    for _ in range(3):
        result = run("list", env=env)
        assert result.returncode == 0 and "pluggy" in imported(result), said(result)
        assert "api" in result.stdout


# -- with agents: live, dead, waiting and paused, in real tmux on a private socket -------------------------


@pytest.fixture
def tmux_socket(private_tmux: PrivateTmux) -> str:
    return private_tmux.socket


def _pane(socket: str, command: str) -> str:
    """A new pane on ``socket`` running ``command`` (kept after its process ends: tmux shows it dead)."""
    made = subprocess.run(["tmux", "-L", socket, "new-session", "-d", "-P", "-F", "#{pane_id}", "-x", "80", "-y", "20",
                           command, ";", "set-option", "-w", "remain-on-exit", "on"],
                          capture_output=True, text=True, check=True)
    return made.stdout.split()[0]


def _field(socket: str, pane: str, field: str) -> str:
    return subprocess.run(["tmux", "-L", socket, "display-message", "-p", "-t", pane, field],
                          capture_output=True, text=True, check=True).stdout.strip()


def _register(records: list[AgentRecord]) -> None:
    registry = JsonRegistry(Path(os.environ["PAO_HOME"]))
    for record in records:
        registry.add(record)


def _agent(name: str, target: str, state: str = "ready", days: int = 3, **fields: object) -> AgentRecord:
    created = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=days, minutes=len(name))  # an age both runs print alike
    fields = {"host": "claude-code", "terminal": "tmux", **fields}
    return AgentRecord(name=name, folder=f"/srv/{name}", topic="fix it", target=target, state=state,
                       created_at=created, updated_at=created, **fields)


def _hooked(name: str, target: str, *events: dict[str, object]) -> AgentRecord:
    """An agent whose CLI reports its events (what pao list shows is the newest event's state)."""
    folder = Path(os.environ["PAO_HOME"], "agents", name)
    folder.mkdir(parents=True)
    (folder / "events.jsonl").write_text("".join(json.dumps({"event": event, "at": 1764500000 + n}) + "\n"
                                                 for n, event in enumerate(events)))
    extra = {"events": True, "agent_dir": str(folder), "delivery": "system-prompt", "nested": {"keys": [1, "two", None]}}
    return _agent(name, target, state="busy", session_id="session-1", pid=4242, briefing_hash="b" * 12, extra=extra)


def _full_then_light(*args: str) -> tuple[object, object]:
    """``pao ARGS`` by the full command (the configuration not yet checked), then by the light one."""
    Path(cache_path(light_path.CHECKED)).unlink(missing_ok=True)
    full = run(*args)
    lightly = run(*args)
    assert "pluggy" in imported(full), said(full)
    assert not HEAVY & imported(lightly), HEAVY & imported(lightly)
    return full, lightly


def test_live_dead_waiting_and_paused_agents_print_alike_by_either_path(tmux_socket: str) -> None:
    live, waiting, exited = (_pane(tmux_socket, "sleep 600") for _ in range(3))
    killed = _pane(tmux_socket, "sleep 600")
    subprocess.run(["tmux", "-L", tmux_socket, "kill-pane", "-t", killed], check=True)
    subprocess.run(["tmux", "-L", tmux_socket, "respawn-pane", "-k", "-t", exited, "true"], check=True)
    deadline = time.monotonic() + 10
    while _field(tmux_socket, exited, "#{pane_dead}") != "1":  # its process ends at once; tmux keeps the pane
        assert time.monotonic() < deadline, "the respawned pane's process did not end"
        time.sleep(0.02)
    _register([
        _agent("live", f"{tmux_socket}:{live}"),
        _hooked("waiting", f"{tmux_socket}:{waiting}", {"hook_event_name": "SessionStart", "session_id": "session-1"},
                {"hook_event_name": "PreToolUse"}, {"hook_event_name": "PermissionRequest"}),
        _agent("exited", f"{tmux_socket}:{exited}", state="busy"),
        _agent("killed", f"{tmux_socket}:{killed}"),
        _agent("no-server", f"pao-light-none-{uuid.uuid4().hex[:6]}:%0"),
        _agent("paused", "", state="paused", terminal="terminal-app"),
    ])
    run("list")  # a complete load writes the plugin index
    for args in (["list"], ["list", "--json"]):
        full, lightly = _full_then_light(*args)
        assert (lightly.returncode, lightly.stdout, said(lightly)) == (full.returncode, full.stdout, said(full)) == (0, full.stdout, "")
    listed = {agent["name"]: agent for agent in json.loads(lightly.stdout)["agents"]}
    assert {name: (agent["observed"]["state"], agent["state_source"]) for name, agent in listed.items()} == {
        "paused": ("paused", "screen"), "no-server": ("dead", "screen"), "killed": ("dead", "screen"),
        "exited": ("dead", "screen"), "waiting": ("waiting", "hooks"), "live": ("ready", "screen")}
    assert listed["waiting"]["delivery"] == {"channel": "system-prompt", "receipt": "2025-11-30T10:53:20+00:00"}
    assert listed["waiting"]["extra"]["nested"] == {"keys": [1, "two", None]} and listed["waiting"]["pid"] == 4242
    table = run("list").stdout.splitlines()
    assert table[0].split() == ["NAME", "STATE", "HOST", "TERMINAL", "AGE", "TOPIC", "FOLDER"]
    waits_for = ["(asks", "permission", "to", "use", '"a', 'tool")']  # what it waits for, as with failed and blocked
    assert ["waiting", "waiting", *waits_for, "claude-code", "tmux", "3d", "fix", "it", "/srv/waiting"] in [
        line.split() for line in table]


@pytest.mark.parametrize("unknown", ["elsewhere", "terminal-app", "unreadable", "older", "bad-target"])
def test_what_the_light_path_does_not_know_takes_the_full_command(tmux_socket: str, unknown: str) -> None:
    pane = _pane(tmux_socket, "sleep 600")
    record = _agent("api", f"{tmux_socket}:{pane}")
    _register([record, _agent("other", f"{tmux_socket}:{pane}")])
    run("list")
    run("list")
    assert light("list")
    path = Path(os.environ["PAO_HOME"], "agents.json")
    document = json.loads(path.read_text())
    stored = document["agents"]["api"]
    if unknown == "elsewhere":  # pao-machines asks that machine (here: it cannot, and says so)
        stored["machine"] = "build-server"
    elif unknown == "terminal-app":  # only its driver can say whether the window is there
        stored["terminal"] = "terminal-app"
    elif unknown == "unreadable":  # the full command says which record it skipped
        stored["pid"] = "12"
    elif unknown == "older":  # read with the defaults of fields added since
        del stored["briefing_hash"]
    else:  # the full command says the target is no tmux target
        stored["target"] = "not a target"
    path.write_text(json.dumps(document))
    assert not light("list")
    assert not light("list", "--json")


def test_the_light_path_knows_the_fields_of_an_agent_record_in_their_order_and_types() -> None:
    hints = typing.get_type_hints(AgentRecord)
    expected = {str: light_path.TEXT, str | None: light_path.MAYBE_TEXT, int | None: (int, type(None)), dt.datetime: dt.datetime,
                typing.Mapping[str, typing.Any]: (dict,)}
    kinds = {field.name: expected.get(hints[field.name], hints[field.name]) for field in attrs.fields(AgentRecord)}
    assert set(typing.get_args(kinds.pop("state"))) == light_path.STATES
    assert kinds == {name: kind for name, kind in light_path.RECORD_FIELDS.items() if name != "state"}
    assert list(kinds) == [name for name in light_path.RECORD_FIELDS if name != "state"]
