"""The briefing's ``more`` section is pao-mcp's: it comes with the plugin that wires the ``pao`` server, never from the core."""

from __future__ import annotations

from pathlib import Path

import pytest

from pao_core.config import load_config
from pao_core.models import BackendResult, BriefingContext, MemoryItem
from pao_core.plugins import build_plugins
from pao_mcp.section import MoreSection


def _keys(environ: dict[str, str], home: Path) -> list[str]:
    config = load_config(environ={"PAO_HOME": str(home)}, tables=[])
    return [section.key for section in build_plugins(environ).briefing_sections(config)]


@pytest.mark.hook("pao_briefing_sections")
def test_the_more_section_comes_with_pao_mcp_only(tmp_path: Path) -> None:
    assert "more" in _keys({}, tmp_path)
    assert "more" not in _keys({"PAO_DISABLE_PLUGINS": "pao-mcp"}, tmp_path)
    assert "more" not in _keys({"PAO_LOAD_PLUGINS": ""}, tmp_path)  # the core names no MCP tool


def test_the_more_section_names_the_tools_and_the_stores() -> None:
    item = MemoryItem("longterm", "obs:a#1", "a", "text")
    found = BriefingContext("topic", (), (item,), {"longterm": BackendResult("longterm", "ok", (item,))})
    text = MoreSection().render(found) or ""
    assert "mcp__pao__search_memory" in text and "(longterm)" in text and "mcp__pao__remember" in text
    empty = MoreSection().render(BriefingContext("topic", (), (), {}))
    assert empty and "narrower words" in empty
