"""A remote spawn and a remote send beside the local ones: whole ``pao`` processes, wall time.

``python benches/machines_bench.py [RUNS] [--json]`` (default 3 runs). The "remote"
machine is a second account behind an sshd on 127.0.0.1 (``pao_testing.sshd``), so
the figures are pao's and OpenSSH's own cost without a network's round trips; add your
link's round trip (one per command once the connection is open, a few for the first).
Both sides run the pinned Claude Code CLI against the loopback Messages stub, each
with its own HOME, PAO_HOME and tmux server. As root, it reruns itself inside a
loopback-only network namespace.

Measured, median of RUNS:

- spawn here / spawn --on (a spawn ends when the agent is ready and has its task);
- send here / send to the remote agent (multiplexed connection open) / the same with the
  connection closed first (a new handshake: what a first command pays);
- list with one remote agent (the machine asked over the open connection);
- the transport alone: ``ssh HOST true`` over the open connection, and with a new one.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from pao_core.plugins import load_config
from pao_testing.anthropic_stub import AnthropicStub
from pao_testing.claude_cli import cli_environment, cli_path, pinned_versions, rerun_isolated, runs_and_json, seed_home
from pao_testing.two_machines import RUN_PAO, Box, two_machines

from pao_machines.ssh import Ssh
from pao_machines.targets import resolve


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[2:4])} failed: {done.stderr.strip()[-400:]}")
    return elapsed, done.stdout


def measure(runs: int) -> dict[str, object]:
    claude = cli_path(pinned_versions()[0])
    with AnthropicStub() as stub, tempfile.TemporaryDirectory(prefix="pao-machines-bench-") as scratch:
        variables = cli_environment(Path("/nonexistent"), stub.url)
        remote_env = {k: v for k, v in variables.items() if k not in ("PATH", "HOME")}
        with two_machines(Path(scratch), claude, remote_env) as box:
            return _measure(box, claude, stub, runs)


def _measure(box: Box, claude: Path, stub: AnthropicStub, runs: int) -> dict[str, object]:
    seed_home(box.sshd.home)
    box.sshd.give(box.sshd.home / ".claude.json")
    local_home = seed_home(box.local / "home")
    env = {**box.local_env, **cli_environment(local_home, stub.url), "PAO_HOME": str(box.local / "pao"),
           "PAO_CONFIG": str(box.local / "config.toml"), "PAO_CLAUDE_COMMAND": str(claude),
           "PAO_TMUX_SOCKET": f"pao-bench-local-{uuid.uuid4().hex[:8]}"}
    pao = [sys.executable, RUN_PAO]
    here = box.local / "work"
    here.mkdir()
    box.remote_folder("work")
    config = load_config(env)
    machine = resolve(config, "box")
    ssh = Ssh(config.home, environ=env)
    times: dict[str, list[float]] = {key: [] for key in (
        "spawn here", "spawn --on", "send here", "send remote", "send remote, new connection", "list with a remote agent",
        "ssh true, open connection", "ssh true, new connection")}
    try:
        for run in range(runs):
            local, remote = f"l{run}", f"r{run}"
            times["spawn here"].append(_timed([*pao, "spawn", "tidy the work", "--folder", str(here), "--name", local], env)[0])
            times["spawn --on"].append(_timed([*pao, "spawn", "tidy the work", "--on", "box", "--folder", "~/work",
                                               "--name", remote], env)[0])
            times["send here"].append(_timed([*pao, "send", local, f"note {run}"], env)[0])
            times["send remote"].append(_timed([*pao, "send", remote, f"note {run}"], env)[0])
            ssh.close(machine)
            times["send remote, new connection"].append(_timed([*pao, "send", remote, f"again {run}"], env)[0])
            times["list with a remote agent"].append(_timed([*pao, "list", "--json"], env)[0])
            ssh.run(machine, ["true"], timeout=30)
            times["ssh true, open connection"].append(ssh.run(machine, ["true"], timeout=30).seconds * 1000)
            ssh.close(machine)
            times["ssh true, new connection"].append(ssh.run(machine, ["true"], timeout=30).seconds * 1000)
            for name in (local, remote):
                _timed([*pao, "kill", name], env)
    finally:
        subprocess.run(["tmux", "-L", env["PAO_TMUX_SOCKET"], "kill-server"], capture_output=True)
    return {"runs": runs, "median_ms": {key: round(statistics.median(values), 1) for key, values in times.items()},
            "all_ms": {key: [round(v, 1) for v in values] for key, values in times.items()}}


def main(argv: list[str]) -> int:
    again = rerun_isolated(__file__, argv)
    if again is not None:
        return again
    runs, as_json = runs_and_json(argv, default=3)
    result = measure(runs)
    if as_json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"pao across machines (loopback sshd), median of {runs} runs, whole pao processes:")
    for key, value in result["median_ms"].items():  # type: ignore[union-attr]
        print(f"  {key:<30} {value:8.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
