"""A plugin that tells which process did what in a ``pao spawn`` run as a user runs it (``tests/test_spawn_helpers.py``).

Installed beside the fake host as a distribution; each event is a JSON line appended to
``$PROBE_OUT``. ``$PROBE_DIE_IN`` names warm-up purposes whose helper ends at once.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Sequence

import attrs

from pao_core.contracts import MemoryBackend
from pao_core.hookspecs import hookimpl
from pao_core.models import MemoryItem


def note(**event: Any) -> None:
    with open(os.environ["PROBE_OUT"], "a", encoding="utf-8") as out:
        out.write(json.dumps({**event, "pid": os.getpid()}) + "\n")


@attrs.define
class WhereBackend(MemoryBackend):
    name: str = "where"

    def search(self, query: str, limit: int, deadline: float) -> Sequence[MemoryItem]:
        note(event="searched", modules=sorted(name for name in ("numpy",) if name in sys.modules))
        return [MemoryItem("where", "w1", "login bug", "the login bug lives in the session cookie", kind="note", score=1.0)]

    def health(self, deadline: float) -> str:
        return "ok"


class Probe:
    @hookimpl
    def pao_warm_up(self, purpose: str, config: object) -> None:
        note(event="warm_up", purpose=purpose)
        if purpose in os.environ.get("PROBE_DIE_IN", "").split(","):
            os._exit(3)

    @hookimpl
    def pao_memory_backends(self, config: object) -> list[WhereBackend]:
        return [WhereBackend()]

    @hookimpl
    def pao_agent_spawned(self, record: object) -> None:
        note(event="spawned", modules=sorted(name for name in ("numpy", "libtmux") if name in sys.modules))


PLUGIN = Probe()
