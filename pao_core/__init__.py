"""pao: spawn terminal coding agents that start knowing what matters.

The public API. Importing this package is cheap: no plugin, database driver,
terminal library or HTTP client is imported until it is used.
"""

from pao_core.contracts import BriefingSection, HostAgent, MemoryBackend, ReadinessDetector, TerminalDriver
from pao_core.hookspecs import hookimpl
from pao_core.models import AgentRecord, BackendResult, Briefing, BriefingContext, MemoryItem, ScreenVerdict, SpawnRequest

__all__ = [
    "AgentRecord",
    "BackendResult",
    "Briefing",
    "BriefingContext",
    "BriefingSection",
    "HostAgent",
    "MemoryBackend",
    "MemoryItem",
    "ReadinessDetector",
    "ScreenVerdict",
    "SpawnRequest",
    "TerminalDriver",
    "hookimpl",
]
