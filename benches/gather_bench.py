"""Gathering is parallel: three fake backends of 50, 100 and 200 ms finish together, and a hung
backend costs its deadline and no more. Prints measured figures; run from the repository root:

    .venv/bin/python benches/gather_bench.py
"""

from __future__ import annotations

import json
import statistics
import sys
import threading
import time

import attrs

from pao_core import MemoryItem
from pao_core.contracts import MemoryBackend
from pao_core.gather import gather


@attrs.frozen
class Sleeper(MemoryBackend):
    name: str
    seconds: float
    hang: threading.Event | None = None

    def search(self, query, limit, deadline):
        if self.hang is not None:
            self.hang.wait()
        time.sleep(self.seconds)
        return [MemoryItem(self.name, f"{self.name}:1", "t", query)]


def measure(runs: int = 30) -> dict[str, float]:
    three = [Sleeper("a", 0.05), Sleeper("b", 0.10), Sleeper("c", 0.20)]
    parallel = []
    for _ in range(runs):
        started = time.perf_counter()
        gather(three, "q", limit=5, timeout=2.0)
        parallel.append((time.perf_counter() - started) * 1000)
    hung = []
    release = threading.Event()
    for _ in range(5):
        started = time.perf_counter()
        gather([Sleeper("hung", 0, hang=release), Sleeper("a", 0.05)], "q", limit=5, timeout=0.3)
        hung.append((time.perf_counter() - started) * 1000)
    release.set()
    return {
        "three_backends_p50_ms": round(statistics.median(parallel), 1),
        "three_backends_max_ms": round(max(parallel), 1),
        "three_backends_target_ms": 215,
        "hung_backend_deadline_ms": 300,
        "hung_backend_p50_ms": round(statistics.median(hung), 1),
        "hung_backend_max_ms": round(max(hung), 1),
    }


if __name__ == "__main__":
    json.dump(measure(), sys.stdout, indent=2)
    print()
