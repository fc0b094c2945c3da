#!/usr/bin/env python3
"""The session channel, measured: hook cost per event, and launch -> first model request carrying the task.

``.venv/bin/python benches/session_channel_bench.py [RUNS] [--json]`` (default 5 runs per mode and
pinned Claude Code version, interleaved). As root it re-runs itself inside a loopback-only
network namespace.

- **hook cost**: wall time of one event appended the way pao's hooks do (one ``sh``:
  ``tr`` + ``date`` + ``printf >>``), against a Python interpreter per event doing the
  same append, 200 events each, the event JSON on stdin.
- **first request**: from the tmux start of Claude Code (pre-seeded HOME, briefing in the
  agent's private folder) to the first conversation request at the loopback stub that
  carries the task. ``command-line``: the task is the CLI's first prompt (pao's default).
  ``paste-first-ready``: the task pasted and Enter pressed at the first frame the detector
  reads as ready, unconfirmed (the race Claude Code 2.1.100 lost). ``confirmed-paste``:
  pao's ``send_text`` at the first ready frame (waits for the paste to show, confirms
  the submission). A run whose task never reached the stub within 60 s counts as lost.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pao_testing.claude_cli import rerun_isolated, runs_and_json  # noqa: E402

MODES = ("command-line", "paste-first-ready", "confirmed-paste")
EVENT = {"session_id": str(uuid.uuid4()), "transcript_path": "/tmp/x.jsonl", "cwd": "/tmp/project",
         "hook_event_name": "Stop", "stop_hook_active": False}
PYTHON_APPEND = (
    "import json, sys, time, os; e = json.load(sys.stdin); os.umask(0o077)\n"
    "with open(sys.argv[1], 'a') as f: f.write(json.dumps({'event': e, 'at': time.time()}) + '\\n')"
)


def hook_cost(events: int = 200) -> dict[str, float]:
    from pao_agents.agentdir import append_command, read_events

    payload = json.dumps(EVENT).encode()
    folder = Path(tempfile.mkdtemp(prefix="pao-bench-hook-"))
    log = folder / "events.jsonl"
    commands = {"sh": ["sh", "-c", append_command(log)], "python": [sys.executable, "-c", PYTHON_APPEND, str(log)]}
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(events):
        for name, command in commands.items():  # interleaved: the same load for both
            started = time.perf_counter()
            subprocess.run(command, input=payload, check=True)
            times[name].append(time.perf_counter() - started)
    assert len(read_events(log, tail_bytes=1 << 30)) == 2 * events, "every appended event reads back"
    result = {f"{name}_p50_ms": round(statistics.median(values) * 1000, 2) for name, values in times.items()}
    result["ratio_python_over_sh"] = round(result["python_p50_ms"] / result["sh_p50_ms"], 1)
    return result


def first_request(version: str, mode: str, stub, run: int) -> float | None:
    from pao_agents import agentdir
    from pao_hosts.claude_code import ClaudeCode, ClaudeCodeOptions
    from pao_agents.conversation import send_text
    from pao_agents.spec import SpawnRequest
    from pao_agents.readiness import ScreenReader, wait_ready
    from pao_testing.claude_cli import PrivateTmux, cli_environment, cli_path, seed_home

    base = Path(tempfile.mkdtemp(prefix="pao-bench-first-"))
    home, folder = seed_home(base / "home"), base / "project"
    folder.mkdir()
    profile = ClaudeCode(ClaudeCodeOptions(command=str(cli_path(version)), permission_mode="default"), home=home)
    profile.preseed(str(folder))
    task = f"Your task: bench task {uuid.uuid4().hex[:10]}."
    private = agentdir.fresh_agent_dir(base / "pao", "bench")
    request = SpawnRequest("bench", str(folder), "bench", "claude-code", session_id=str(uuid.uuid4()), agent_dir=str(private),
                           prompt=task if mode == "command-line" else None)
    agentdir.write_private(private, {agentdir.BRIEFING: "# Briefing\nA fact.\n", **profile.session_files(request)})
    tmux = PrivateTmux(f"pao-bench-{os.getpid()}-{run}-{mode}")
    reader = ScreenReader.for_host("claude-code", [profile.detector()])
    driver = _TmuxDriver(tmux)
    try:
        started = time.time()  # the stub stamps requests with the wall clock
        pane = tmux.start("bench", str(folder), profile.command(request), cli_environment(home, stub.url))
        if mode != "command-line":
            wait_ready(driver, pane, reader, 90, name="bench")
            if mode == "paste-first-ready":
                tmux.paste(pane, task)
                tmux.press(pane, "Enter")
            else:
                send_text(driver, pane, task, submit_key="Enter", reader=reader, name="bench")
        found = stub.wait_for_message(task, timeout=60, where=lambda r: r.is_conversation)
        return None if found is None else found.received_at - started
    finally:
        tmux.kill_server()


class _TmuxDriver:
    """The three driver calls ``wait_ready`` and ``send_text`` make, on a private tmux server."""

    def __init__(self, tmux) -> None:
        self.tmux = tmux

    def read(self, target: str) -> str:
        return self.tmux.capture(target)

    def is_alive(self, target: str) -> bool:
        return "Pane is dead" not in self.tmux.capture(target)

    def paste(self, target: str, text: str) -> None:
        self.tmux.paste(target, text)

    def press(self, target: str, key: str) -> None:
        self.tmux.press(target, key)


def main() -> int:
    isolated = rerun_isolated(__file__, sys.argv[1:])
    if isolated is not None:
        return isolated
    from pao_testing.anthropic_stub import AnthropicStub
    from pao_testing.claude_cli import pinned_versions

    runs, as_json = runs_and_json(sys.argv[1:])
    report: dict = {"load_average_start": round(os.getloadavg()[0], 1), "hook_cost": hook_cost()}
    with AnthropicStub() as stub:
        for version in pinned_versions():
            times: dict[str, list[float | None]] = {mode: [] for mode in MODES}
            for run in range(runs):
                for mode in MODES:  # interleaved, so load drifts hit every mode alike
                    times[mode].append(first_request(version, mode, stub, run))
            report[f"claude-code {version}"] = {
                mode: {"runs": runs, "lost": sum(t is None for t in values),
                       "p50_s": round(statistics.median([t for t in values if t is not None] or [float("nan")]), 2)}
                for mode, values in times.items()
            }
    report["load_average_end"] = round(os.getloadavg()[0], 1)
    print(json.dumps(report, indent=2) if as_json else _table(report))
    return 0


def _table(report: dict) -> str:
    cost = report["hook_cost"]
    lines = [f"hook cost per event: sh {cost['sh_p50_ms']} ms, python {cost['python_p50_ms']} ms "
             f"(x{cost['ratio_python_over_sh']})"]
    for key, modes in report.items():
        if key.startswith("claude-code"):
            for mode, row in modes.items():
                lines.append(f"{key} {mode}: launch -> first request p50 {row['p50_s']} s, lost {row['lost']}/{row['runs']}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
