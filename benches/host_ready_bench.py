#!/usr/bin/env python3
"""Start-to-ready time of the pinned Claude Code, Codex and Gemini CLIs, as pao starts them.

``.venv/bin/python benches/host_ready_bench.py [RUNS] [--json]`` (default 5 per host). As root it
re-runs itself inside a loopback-only network namespace. Each run: a fresh HOME with the
user's model settings pointing at the loopback stub, pao's delivery and pre-seed, the
profile's command line in a private tmux server; the clock runs from the tmux start to
the first screen the host's detector reads as ready.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pao_agents.spec import host_agents, readiness_detectors
from pao_testing.claude_cli import rerun_isolated, runs_and_json  # noqa: E402


def one_start(case, run: int) -> float:
    from pao_core.plugins import load_config
    from pao_agents.spec import SpawnRequest
    from pao_core.plugins import build_plugins
    from pao_agents.readiness import ScreenReader
    from pao_testing.hostrun import HostTmux, watch

    host = case.host
    if case.binary is None or not case.binary.exists():
        raise SystemExit(f"{host}: the pinned CLI is not installed ({case.binary}); scripts/setup --test installs it")
    base = Path(tempfile.mkdtemp(prefix=f"pao-bench-{host}-"))
    home, folder = base / "home", base / "project"
    home.mkdir()
    folder.mkdir()
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    with case.make_stub() as stub:
        env = {"HOME": str(home), "PATH": os.environ["PATH"], "TERM": "xterm-256color", "LANG": "C.UTF-8",
               "PAO_HOME": str(base / "pao"), "PAO_CONFIG": os.devnull, case.command_variable: str(case.binary),
               **case.user_setup(home, stub)}
        os.environ.update(env)
        config, plugins = load_config(env), build_plugins(env)
        profile = next(h for h in host_agents(plugins, config) if h.name == host)
        (folder / profile.context_file).write_text("Bench notes.\n")
        profile.preseed(str(folder))
        reader = ScreenReader.for_host(host, readiness_detectors(plugins, config), plugins)
        request = SpawnRequest(topic="bench", folder=str(folder), name=f"bench{run}", host=host)
        tmux = HostTmux(f"pao-bench-{os.getpid()}-{host}-{run}")
        try:
            pane = tmux.start("bench", str(folder), profile.command(request), env)
            frames = watch(lambda: tmux.capture(pane), lambda s: (reader.classify(s).state, None),
                           lambda s: s in ("ready", "blocked"), 120)
        finally:
            tmux.close()
    if frames[-1].state != "ready":
        raise SystemExit(f"{host} run {run}: {frames[-1].state}\n{frames[-1].screen}")
    return frames[-1].at


def main() -> int:
    isolated = rerun_isolated(__file__, sys.argv[1:])
    if isolated is not None:
        return isolated
    runs, as_json = runs_and_json(sys.argv[1:])
    load = os.getloadavg()[0]
    report = {}
    from pao_testing.claude_cli import pinned_versions
    from pao_testing.host_cases import CASES, claude_case

    cases = {f"claude-code {version}": claude_case(version) for version in pinned_versions()} | CASES
    for host, case in cases.items():
        times = [one_start(case, run) for run in range(runs)]
        report[host] = {"runs": runs, "p50_s": round(statistics.median(times), 2), "min_s": round(min(times), 2),
                        "max_s": round(max(times), 2), "load_average": load}
        if not as_json:
            print(f"{host}: start to ready over {runs} runs: p50 {statistics.median(times):.2f} s, "
                  f"min {min(times):.2f} s, max {max(times):.2f} s (load average at start {load:.1f})")
    if as_json:
        print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
