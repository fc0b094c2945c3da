"""`pao plugins --json` as a whole process, against `python -c pass`, measured in one run.

Target (issue 2): pao plugins within 2x python's own start-up plus 150 ms (the two
interleaved, wall-clock and CPU time), with a plugin index of its own (a cache folder of
the run's). Also lists any heavy module imported at start-up. Run from the repository root:

    .venv/bin/python benches/startup_bench.py
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile

from cao_startup_bench import run_once

HEAVY = ("sqlalchemy", "psycopg", "libtmux", "requests", "appscript")


# Users' Pythons cache bytecode; a PYTHONDONTWRITEBYTECODE set in a build sandbox would make
# every run recompile pao from source, which is not what a user's `pao` costs.
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def timed(commands: dict[str, list[str]], runs: int, env: dict[str, str]) -> dict[str, list[tuple[float, float]]]:
    """Wall-clock and CPU milliseconds of each command, ``runs`` times, interleaved (a busy machine slows all alike)."""
    samples: dict[str, list[tuple[float, float]]] = {label: [] for label in commands}
    for argv in commands.values():  # warm-up: the bytecode cache, pao's plugin index
        run_once(argv, env)
    for _ in range(runs):
        for label, argv in commands.items():
            samples[label].append(run_once(argv, env))
    return samples


def main(runs: int = 15) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="pao-startup-cache-") as cache:
        # a cache folder of the run's own, as a user's is: a shared ~/.cache/pao is rewritten by every other
        # checkout's pao, which makes each run a complete plugin load
        samples = timed({"python": [sys.executable, "-c", "pass"],
                         "pao": [sys.executable, "-m", "pao_core", "plugins", "--json"]}, runs, {**ENV, "XDG_CACHE_HOME": cache})
    (python_ms, pao_ms), (python_cpu, pao_cpu) = ([statistics.median(sample[kind] for sample in samples[label])
                                                   for label in ("python", "pao")] for kind in (0, 1))
    modules = subprocess.run(
        [sys.executable, "-c", "import sys, pao_core.plugins as p; p.get_plugins(); print(' '.join(sys.modules))"],
        check=True, capture_output=True, text=True,
    ).stdout.split()
    return {
        "python_pass_p50_ms": round(python_ms, 1),
        "pao_plugins_json_p50_ms": round(pao_ms, 1),
        "target_ms": round(2 * python_ms + 150, 1),
        "met": pao_ms <= 2 * python_ms + 150,
        "python_pass_cpu_p50_ms": round(python_cpu, 1),
        "pao_plugins_json_cpu_p50_ms": round(pao_cpu, 1),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "heavy_modules_at_startup": sorted({m.split(".")[0] for m in modules} & set(HEAVY)),
    }


if __name__ == "__main__":
    json.dump(main(), sys.stdout, indent=2)
    print()
