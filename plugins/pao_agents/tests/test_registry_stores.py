"""The registry as a hook: which store `[registry] url` chooses, and the `machine` of every record."""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Callable

import attrs
import pytest

from pao_agents.spec import machine_name
from pao_core.plugins import load_config
from pao_agents.spec import RegistryStore
from pao_core.errors import ConfigError
from pao_agents.spec import DuplicateAgent, UnknownAgent
from pao_core.hookspecs import hookimpl
from pao_agents.spec import AgentRecord
from pao_core.plugins import build_plugins
from pao_agents.registry import JsonRegistry, open_registry


def _record(name: str, **changes: object) -> AgentRecord:
    return AgentRecord(name=name, folder="/tmp", topic="t", host="fake", terminal="tmux", target="", **changes)


@attrs.define
class DictRegistry(RegistryStore):
    """A team's own store: records in a dict, for the ``memory://`` scheme."""

    records: dict[str, AgentRecord] = attrs.field(factory=dict)
    name: str = "memory"
    schemes: tuple[str, ...] = ("memory",)

    def list(self) -> list[AgentRecord]:
        return sorted(self.records.values(), key=lambda record: record.created_at)

    def find(self, name: str) -> AgentRecord | None:
        return self.records.get(name)

    def add(self, record: AgentRecord, candidates: Callable[[int], str] | None = None) -> AgentRecord:
        if record.name in self.records:
            raise DuplicateAgent(record.name)
        self.records[record.name] = record
        return record

    def change(self, name: str, edit: Callable[[AgentRecord], AgentRecord]) -> AgentRecord:
        if name not in self.records:
            raise UnknownAgent(name)
        self.records[name] = edit(self.records[name])
        return self.records[name]

    def remove(self, name: str) -> AgentRecord:
        return self.records.pop(name)


@pytest.mark.hook("pao_registry_stores")
def test_the_url_s_scheme_chooses_the_store_and_a_url_nobody_serves_is_an_error(
    pao_config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    team = DictRegistry()
    plugins = build_plugins()
    plugins.manager.register(types.SimpleNamespace(pao_registry_stores=hookimpl(lambda config: [team])), name="team")
    assert isinstance(open_registry(load_config(), plugins), JsonRegistry)  # no URL: pao's own file

    pao_config_file.write_text('[registry]\nurl = "memory://team"\n')
    chosen = open_registry(load_config(), plugins)
    assert chosen is team
    chosen.add(_record("api"))
    assert chosen.update("api", state="ready").state == "ready" and team.records["api"].state == "ready"

    monkeypatch.setenv("PAO_REGISTRY_URL", "etcd://admin:hunter2@10.0.0.5:2379/pao")  # the environment wins
    with pytest.raises(ConfigError) as refused:
        open_registry(load_config(), plugins)
    message = str(refused.value)
    assert "etcd://admin:***@10.0.0.5:2379/pao" in message and "hunter2" not in message
    assert "\n" not in message and "memory" in message  # names the schemes that are served


def test_a_registry_url_without_a_scheme_is_refused_without_echoing_it(pao_config_file: Path) -> None:
    pao_config_file.write_text('[registry]\nurl = "admin:hunter2@db:5432/pao"\n')
    with pytest.raises(ConfigError, match="registry.url: must be a URL") as refused:
        load_config()
    assert "hunter2" not in str(refused.value)


def test_machine_name_is_configured_or_the_short_host_name(pao_config_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("socket.gethostname", lambda: "build.example.com")
    assert machine_name(load_config()) == "build"
    pao_config_file.write_text('[machine]\nname = "gpu-1"\n')
    assert machine_name(load_config()) == "gpu-1"
    pao_config_file.write_text('[machine]\nname = "gpu 1; rm"\n')
    with pytest.raises(ConfigError, match="machine.name"):
        load_config()


def test_records_carry_their_machine_and_old_records_read_as_this_machine(tmp_path: Path) -> None:
    registry = JsonRegistry(tmp_path, "laptop")
    assert registry.add(_record("here")).machine == "laptop"
    assert registry.add(_record("there", machine="gpu-1")).machine == "gpu-1"
    document = json.loads((tmp_path / "agents.json").read_text())
    assert document["agents"]["there"]["machine"] == "gpu-1"
    del document["agents"]["here"]["machine"]  # written by a pao before records had a machine
    (tmp_path / "agents.json").write_text(json.dumps(document))
    assert {r.name: r.machine for r in registry.list()} == {"here": "laptop", "there": "gpu-1"}
    assert registry.update("here", state="ready").machine == "laptop"
    assert json.loads((tmp_path / "agents.json").read_text())["agents"]["here"]["machine"] == "laptop"


def test_list_and_status_json_show_the_machine(pao, pao_config_file: Path) -> None:
    pao_config_file.write_text('[machine]\nname = "laptop"\n')
    registry = JsonRegistry(Path(load_config().home), "laptop")
    registry.add(_record("api", state="paused"))
    registry.add(_record("gpu-job", machine="gpu-1", state="paused"))
    listed = pao("list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert {a["name"]: a["machine"] for a in json.loads(listed.stdout)["agents"]} == {"api": "laptop", "gpu-job": "gpu-1"}
    status = pao("status", "api", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["machine"] == "laptop"
