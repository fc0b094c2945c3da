"""The briefing's ``more`` section: how the agent asks memory for more, and writes back, through pao-mcp's tools.

pao-mcp adds it (``pao_briefing_sections``) because it is what wires the ``pao`` server into each session; it says
nothing where that server is not wired (``pao brief``, ``pao spawn --no-mcp``, a host without MCP).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from pao_core.contracts import BriefingSection
from pao_core.sections import store_names
from pao_mcp import SERVER_NAME

if TYPE_CHECKING:
    from pao_core.models import BriefingContext

SEARCH_TOOL = "the `search_memory` tool of the `pao` MCP server (`mcp__pao__search_memory` in Claude Code)"
REMEMBER_TOOL = "`remember` (`mcp__pao__remember`)"


@attrs.frozen
class MoreSection(BriefingSection):
    key: str = "more"
    title: str = "Asking memory for more"
    order: int = 90

    def render(self, context: BriefingContext) -> str | None:
        if SERVER_NAME not in context.servers:  # its tools are not in this session
            return None
        if not context.items:
            return f"{SEARCH_TOOL[0].upper()}{SEARCH_TOOL[1:]} with narrower words or a proper noun searches every " \
                   f"memory store again. {REMEMBER_TOOL} stores what you learn for the agents after you."
        return (
            f"{SEARCH_TOOL[0].upper()}{SEARCH_TOOL[1:]} searches every memory store again ({store_names(context)}) "
            f"with other words and shows each item's source and date. {REMEMBER_TOOL} stores a fact you "
            "learned for the agents after you, with your name and session."
        )
