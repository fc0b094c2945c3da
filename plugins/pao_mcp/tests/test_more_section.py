"""The briefing's ``more`` section is pao-mcp's: it comes with the plugin that wires the ``pao`` server, never from the
core, and only into a briefing whose session has that server (not with ``--no-mcp``, nor for a host without MCP)."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import attrs
import pytest

from pao_agents.spec import McpServer, McpWiring
from pao_core.hookspecs import hookimpl
from pao_core.models import BackendResult, BriefingContext, MemoryItem
from pao_core.plugins import build_plugins, get_plugins, load_config, reset_plugins
from pao_mcp.section import MoreSection
from pao_testing.lifecycle.fake_host import FakeDetector, FakeHost
from pao_testing.lifecycle.fixtures import Pao, pao  # noqa: F401  (fixture)

TITLE = "## Asking memory for more"


def _keys(environ: dict[str, str], home: Path) -> list[str]:
    config = load_config(environ={"PAO_HOME": str(home)}, tables=[])
    return [section.key for section in build_plugins(environ).briefing_sections(config)]


@pytest.mark.hook("pao_briefing_sections")
def test_the_more_section_comes_with_pao_mcp_only(tmp_path: Path) -> None:
    assert "more" in _keys({}, tmp_path)
    assert "more" not in _keys({"PAO_DISABLE_PLUGINS": "pao-mcp"}, tmp_path)
    assert "more" not in _keys({"PAO_LOAD_PLUGINS": ""}, tmp_path)  # the core names no MCP tool


def test_the_more_section_names_the_tools_and_the_stores_of_a_session_with_the_pao_server() -> None:
    item = MemoryItem("longterm", "obs:a#1", "a", "text")
    found = BriefingContext("topic", (), (item,), {"longterm": BackendResult("longterm", "ok", (item,))}, ("pao",))
    text = MoreSection().render(found) or ""
    assert "mcp__pao__search_memory" in text and "(longterm)" in text and "mcp__pao__remember" in text
    empty = MoreSection().render(BriefingContext("topic", (), (), {}, ("pao",)))
    assert empty and "narrower words" in empty
    assert MoreSection().render(attrs.evolve(found, servers=())) is None  # pao brief: no session yet
    assert MoreSection().render(attrs.evolve(found, servers=("other",))) is None


@attrs.define
class McpHost(FakeHost):
    """The fake host, with a session that takes MCP servers (a file in the agent's folder, as Claude Code's)."""

    name: str = "fake-mcp"

    def mcp_wiring(self, servers: Sequence[McpServer], folder: Path, environ: Mapping[str, str]) -> McpWiring:
        return McpWiring(files={"fake-mcp.json": " ".join(server.name for server in servers)})


class McpHostPlugin:
    @hookimpl
    def pao_host_agents(self, config: object) -> list[FakeHost]:
        return [McpHost()]

    @hookimpl
    def pao_readiness_detectors(self, config: object) -> list[FakeDetector]:
        return [FakeDetector(hosts=("fake-mcp",))]


@pytest.fixture
def with_mcp(pao: Pao, monkeypatch: pytest.MonkeyPatch) -> Pao:  # noqa: F811
    monkeypatch.setenv("PAO_LOAD_PLUGINS", "pao-agents,pao-tmux,pao-hosts,pao-mcp")
    reset_plugins()
    get_plugins().manager.register(pao.plugin, name="fake-host")
    get_plugins().manager.register(McpHostPlugin(), name="fake-mcp-host")
    return pao


def _spawned_briefing(pao: Pao, folder: str, *options: str) -> str:
    code, _, err = pao("spawn", "fix the login bug", "--folder", str(pao.folder(folder)), "--no-nudge", *options)
    assert code == 0, err
    return (pao.folder(folder) / "CONTEXT_BRIEFING.md").read_text()


def test_a_spawn_s_briefing_names_pao_s_tools_only_when_its_session_has_the_pao_server(with_mcp: Pao) -> None:
    wired = _spawned_briefing(with_mcp, "wired", "--host", "fake-mcp", "--name", "wired")
    assert TITLE in wired and "mcp__pao__search_memory" in wired
    assert (with_mcp.home / "agents" / "wired" / "fake-mcp.json").read_text() == "pao"  # the server was wired
    assert TITLE not in _spawned_briefing(with_mcp, "unwired", "--host", "fake-mcp", "--name", "unwired", "--no-mcp")
    assert TITLE not in _spawned_briefing(with_mcp, "plain", "--host", "fake", "--name", "plain")  # a host without MCP
