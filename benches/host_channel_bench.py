#!/usr/bin/env python3
"""Each host's channels, measured: launch -> first model request carrying the task, and the cost of one hook event.

``.venv/bin/python benches/host_channel_bench.py [RUNS] [--json]`` (default 3 runs per host, the hosts
taking turns). As root it re-runs itself inside a loopback-only network namespace.

- **launch -> task at the model**: from the start of ``pao spawn TASK --host H`` (the whole process,
  an empty configuration, every installed plugin: what a user runs) to the first request at the
  host's loopback stub whose body carries TASK. Claude Code and Codex get the briefing through
  their session channel and the task as the first prompt; Gemini CLI gets the file channel and
  the pasted nudge (docs/hosts.md says why).
- **hook cost**: wall time of one event through each host's own hook command, 200 events each,
  the event JSON on stdin: the append every hook does (Claude Code, Codex), and Codex's
  SessionStart hook, which also prints the briefing (``cat`` of a 6,000-character briefing as JSON).
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pao_testing.claude_cli import REPO_ROOT, pinned_versions, rerun_isolated, runs_and_json  # noqa: E402
from pao_testing.host_cases import CASES, HostCase, claude_case  # noqa: E402

DEADLINE = 120.0


def hook_cost(events: int = 200) -> dict[str, float]:
    from pao_agents.spec import EVENTS, append_command
    from pao_hosts.session_hooks import hook_command, session_start_file

    folder = Path(tempfile.mkdtemp(prefix="pao-bench-hooks-"))
    (folder / "briefing.md").write_text("- a remembered fact about the billing exporter\n" * 130)
    for name, text in session_start_file(str(folder)).items():
        (folder / name).write_text(text)
    commands = {"append (Claude Code, Codex)": append_command(folder / EVENTS),
                "Codex SessionStart (append + briefing)": hook_command(str(folder), "SessionStart")}
    payload = json.dumps({"session_id": str(uuid.uuid4()), "hook_event_name": "Stop", "cwd": "/tmp/p"}).encode()
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(events):
        for name, command in commands.items():
            started = time.perf_counter()
            subprocess.run(["sh", "-c", command], input=payload, check=True, stdout=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - started)
    return {name: round(statistics.median(values) * 1000, 2) for name, values in times.items()}


def first_request(label: str, case: HostCase, run: int) -> float | None:
    base = REPO_ROOT / "build" / f"host-bench-{os.getpid()}-{uuid.uuid4().hex[:6]}"  # Gemini: no world-writable parent
    base.mkdir(parents=True, mode=0o700)
    home, folder = base / "home", base / "project"
    home.mkdir()
    folder.mkdir()
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    task = f"Bench task {uuid.uuid4().hex[:10]}"
    socket = f"pao-bench-{os.getpid()}-{run}"
    (base / "config.toml").write_text("")
    with case.make_stub() as stub:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith(("PAO_", "CODEX_", "GEMINI_"))},
               "HOME": str(home), **case.user_setup(home, stub), "PAO_TMUX_SOCKET": socket, "TERM": "xterm-256color",
               case.command_variable: str(case.binary), "PAO_HOME": str(base / "pao"), "PAO_CONFIG": str(base / "config.toml")}
        pao = [str(Path(sys.executable).with_name("pao"))]
        started = time.time()
        done = subprocess.run([*pao, "spawn", task, "--folder", str(folder), "--host", case.host, "--name", "bench"],
                              env=env, capture_output=True, text=True, timeout=300)
        found = stub.wait_for(lambda r: r.route.endswith(case.model_route) and task in json.dumps(r.body), DEADLINE) \
            if done.returncode == 0 else None
        if done.returncode:
            print(f"host_channel_bench: {label}: {done.stderr.strip()[-300:]}", file=sys.stderr)
        subprocess.run([*pao, "kill", "bench"], env=env, capture_output=True, timeout=120)
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)
    subprocess.run(["rm", "-rf", str(base)], check=False)
    return None if found is None else found.received_at - started


def main(runs: int) -> dict[str, object]:
    hosts = {f"claude-code {version}": claude_case(version) for version in pinned_versions()}
    hosts.update({name: case for name, case in CASES.items() if case.binary is not None})
    samples: dict[str, list[float | None]] = {label: [] for label in hosts}
    for run in range(runs):
        for label, case in hosts.items():
            samples[label].append(first_request(label, case, run))
    launch = {}
    for label, values in samples.items():
        measured = [v for v in values if v is not None]
        launch[label] = {"runs": len(values), "lost": values.count(None),
                         "p50_s": round(statistics.median(measured), 2) if measured else None}
    return {"launch_to_task_at_model": launch, "hook_cost_p50_ms": hook_cost(),
            "load_average": [round(x, 2) for x in os.getloadavg()]}


if __name__ == "__main__":
    code = rerun_isolated(__file__, sys.argv[1:])
    if code is not None:
        sys.exit(code)
    runs, _ = runs_and_json(sys.argv[1:], default=3)
    json.dump(main(runs), sys.stdout, indent=2)
    print()
