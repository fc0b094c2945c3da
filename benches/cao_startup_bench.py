"""Start-up beside cli-agent-orchestrator: `pao --help`, `pao list` and `cao --help`, interleaved in one run.

cao 2.5.4 (PyPI `cli-agent-orchestrator`) is installed into a scratch virtual environment
of its own (`.cache/bench/cao-2.5.4`, made on first use), never into pao's. Each round
runs the three commands once, in a rotating order, so that the machine's load falls on
all of them alike; the figures are medians over the rounds. `pao list` runs against an
empty registry in a throwaway PAO_HOME, and `pao list, 3 agents` against a second one
holding three live agents in tmux (panes running `sleep` on a private tmux server; without
tmux that row is left out), the case users live in. Both are the everyday answer, given
before any plugin loads (``pao_agents.light``: one `tmux list-panes` for the three). The
target: each `pao` row no slower than `cao --help`. Run from the repository root:

    .venv/bin/python benches/cao_startup_bench.py [ROUNDS]
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CAO_VERSION = "2.5.4"
ROOT = Path(__file__).resolve().parents[1]
CAO_VENV = ROOT / ".cache" / "bench" / f"cao-{CAO_VERSION}"


def cao_binary() -> Path:
    binary = CAO_VENV / "bin" / "cao"
    if not binary.exists():
        subprocess.run([sys.executable, "-m", "venv", str(CAO_VENV)], check=True)
        subprocess.run([str(CAO_VENV / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        f"cli-agent-orchestrator=={CAO_VERSION}"], check=True)
    return binary


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall-clock and CPU milliseconds of one run (CPU time is inflated less by a busy machine)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000


def register_live_agents(home: Path, socket: str, count: int) -> bool:
    """``count`` agents in ``home``'s registry, each a live tmux pane on the private server ``socket``."""
    if shutil.which("tmux") is None:
        return False
    from pao_agents.registry import JsonRegistry
    from pao_agents.spec import AgentRecord

    registry = JsonRegistry(home)
    for number in range(count):
        new = ["new-session", "-d", "-s", "pao"] if number == 0 else ["new-window", "-t", "pao:"]
        pane = subprocess.run(["tmux", "-L", socket, *new, "-P", "-F", "#{pane_id}", "sleep 3600"], check=True,
                              capture_output=True, text=True).stdout.strip()
        registry.add(AgentRecord(name=f"agent-{number}", folder=str(home), topic="bench", host="claude-code",
                                 terminal="tmux", target=f"{socket}:{pane}", state="ready"))
    return True


def main(rounds: int = 21) -> dict[str, object]:
    pao = str(Path(sys.executable).with_name("pao"))
    socket = f"pao-startup-{os.getpid()}"
    with tempfile.TemporaryDirectory(prefix="pao-startup-") as scratch:
        env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
        env.update(PAO_HOME=str(Path(scratch) / "home"), PAO_CONFIG=str(Path(scratch) / "config.toml"),
                   HOME=str(Path(scratch)))
        Path(scratch, "config.toml").write_text("")
        commands = {"pao --help": ([pao, "--help"], env), "pao list": ([pao, "list"], env),
                    "cao --help": ([str(cao_binary()), "--help"], env)}
        try:
            if register_live_agents(Path(scratch) / "agents", socket, 3):
                commands["pao list, 3 agents"] = ([pao, "list"], {**env, "PAO_HOME": str(Path(scratch) / "agents")})
            samples: dict[str, list[tuple[float, float]]] = {label: [] for label in commands}
            for argv, command_env in commands.values():  # warm-up: bytecode caches, the page cache, pao's indexes
                run_once(argv, command_env)
            labels = list(commands)
            for round_ in range(rounds):
                for label in labels[round_ % len(labels):] + labels[: round_ % len(labels)]:
                    samples[label].append(run_once(*commands[label]))
        finally:
            subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    medians = {label: round(statistics.median(wall for wall, _ in values), 1) for label, values in samples.items()}
    cpu = {label: round(statistics.median(cpu for _, cpu in values), 1) for label, values in samples.items()}
    cao = medians["cao --help"]
    return {
        "rounds": rounds,
        "p50_ms": medians,
        "cpu_p50_ms": cpu,
        "ratio_to_cao": {label: round(ms / cao, 2) for label, ms in medians.items() if label != "cao --help"},
        "cpu_ratio_to_cao": {label: round(ms / cpu["cao --help"], 2) for label, ms in cpu.items()
                             if label != "cao --help"},
        "met": all(medians[label] <= cao for label in medians),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


if __name__ == "__main__":
    json.dump(main(int(sys.argv[1]) if len(sys.argv) > 1 else 21), sys.stdout, indent=2)
    print()
