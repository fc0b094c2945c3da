#!/usr/bin/env python3
"""From a CLI's event to the notification, with no ``pao monitor``: the real hook command path.

An agent with Claude Code's per-session hook commands (``ClaudeCode.session_files``), in a throwaway
``PAO_HOME``, notifying a webhook receiver on 127.0.0.1 and a command that records its argv. Each round runs
the UserPromptSubmit hook (the turn starts: the agent is recorded busy), then the Stop hook, each with
``/bin/sh -c`` and the event's JSON on stdin as the CLI runs them, and times:

- ``event_to_webhook``: from starting the Stop hook to the receiver holding the POST;
- ``event_to_command``: from starting it to the command having run;
- ``hook_wait``: how long the CLI waits for the Stop hook (the recorder runs in the background);
- ``recorder_start``: ``python -I -m pao_agents.eventhook`` of an unknown agent (its start-up and exit).

    .venv/bin/python benches/notify_bench.py [--rounds 30] [--json]

The whole plugin set is loaded (``PAO_LOAD_PLUGINS`` and ``PAO_DISABLE_PLUGINS`` are cleared), as a user has it: the
recorder's start-up is most of the figure. The same clock with the real CLI firing the event, on a real
``pao spawn``: ``benches/state_bench.py``'s ``event_to_notified``.

Run it under the shared lock and read the load average it reports: a figure at load > 1.5 is not a figure.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

TARGET_P95_S = 2.0


def figures(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"runs": len(values), "p50_ms": round(statistics.median(values) * 1000, 1),
            "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000, 1),
            "max_ms": round(ordered[-1] * 1000, 1)}


def wait_until(probe: Callable[[], bool], timeout: float = 20.0) -> float:
    """Seconds (monotonic) when ``probe`` first held; raises when it never did."""
    give_up = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > give_up:
            raise TimeoutError("no notification within 20 s")
        time.sleep(0.002)
    return time.monotonic()


def fire(command: str, event: dict[str, Any]) -> float:
    started = time.monotonic()
    subprocess.run(["/bin/sh", "-c", command], input=json.dumps(event), capture_output=True, text=True, check=True,
                   cwd="/")
    return started


def setup(home: Path, webhook: str) -> tuple[Path, dict[str, str], Path]:
    """The agent ``api`` (busy) with its hook commands; the command channel's log."""
    from pao_agents import agentdir
    from pao_agents.resolve import AgentContext
    from pao_agents.spec import AgentRecord, SpawnRequest
    from pao_core.plugins import load_config
    from pao_hosts.claude_code import SETTINGS

    log, script = home / "argv.log", home / "record-argv"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {log}\n')
    script.chmod(0o700)
    Path(os.environ["PAO_CONFIG"]).write_text(f'[notify]\ncommand = ["{script}", "{{name}}", "{{state}}"]\n'
                                              f'webhook = "{webhook}/hook/bench"\ncollapse = 0\n')
    agents = AgentContext.open(load_config())
    folder = agentdir.fresh_agent_dir(agents.config.home, "api")
    agents.registry.add(AgentRecord("api", "/src/api", "benchmark", "claude-code", "tmux", "pao:%1",
                                    extra={"agent_dir": str(folder), "events": "hooks (--settings)"}))
    agents.set_state("api", "ready", source="spawn")
    host = agents.host("claude-code")  # as configured: PAO_CLAUDE_COMMAND names the CLI when it is not on PATH
    request = SpawnRequest("benchmark", "/src/api", "api", "claude-code", agent_dir=str(folder))
    settings = json.loads(host.session_files(request)[SETTINGS])
    return folder, {event: entry[0]["hooks"][0]["command"] for event, entry in settings["hooks"].items()}, log


def lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def measure(rounds: int) -> dict[str, Any]:
    from pao_testing.webhook_stub import WebhookReceiver

    webhook, command, waits, starts = [], [], [], []
    with WebhookReceiver() as receiver:
        folder, hooks, log = setup(Path(os.environ["PAO_HOME"]), receiver.url)
        for _ in range(rounds):
            fire(hooks["UserPromptSubmit"], {"hook_event_name": "UserPromptSubmit", "prompt": "go"})
            wait_until(lambda: (folder / "state").read_text().strip() == "busy")
            posts, runs = len(receiver.requests), lines(log)
            started = fire(hooks["Stop"], {"hook_event_name": "Stop", "session_id": "s"})
            waits.append(time.monotonic() - started)
            webhook.append(wait_until(lambda: len(receiver.requests) > posts) - started)
            command.append(wait_until(lambda: lines(log) > runs) - started)
    for _ in range(min(rounds, 11)):
        began = time.monotonic()
        subprocess.run([sys.executable, "-I", "-m", "pao_agents.eventhook", str(folder.parent / "nobody")],
                       capture_output=True, check=False)
        starts.append(time.monotonic() - began)
    p95 = figures(webhook)["p95_ms"] / 1000
    return {"event_to_webhook": figures(webhook), "event_to_command": figures(command), "hook_wait": figures(waits),
            "recorder_start": figures(starts), "target_p95_s": TARGET_P95_S, "met": p95 <= TARGET_P95_S}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--claude", help="the pinned Claude Code whose hook commands to run (default: the newest pin; "
                                          "PAO_CLAUDE_COMMAND, when set, wins)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from pao_testing.claude_cli import cli_path, pinned_versions

    args.claude = args.claude or max(pinned_versions(), key=lambda v: tuple(map(int, v.split("."))))
    os.environ.setdefault("PAO_CLAUDE_COMMAND", str(cli_path(args.claude)))  # its hooks depend on its version
    with tempfile.TemporaryDirectory(prefix="pao-notify-bench-") as root:
        for limiting in ("PAO_LOAD_PLUGINS", "PAO_DISABLE_PLUGINS"):  # the whole plugin set, as a user has it
            os.environ.pop(limiting, None)
        os.environ.update(PAO_HOME=str(Path(root, "pao")), PAO_CONFIG=str(Path(root, "config.toml")), HOME=root)
        os.environ.update(XDG_CACHE_HOME=str(Path(root, "cache")))
        Path(root, "pao").mkdir(mode=0o700)
        before = os.getloadavg()
        result = measure(args.rounds)
        result["load_average"] = {"before": [round(x, 2) for x in before],
                                  "after": [round(x, 2) for x in os.getloadavg()]}
        result["cpus"] = os.cpu_count()
        result["claude_command"] = os.environ["PAO_CLAUDE_COMMAND"]
        result["command"] = (f"flock /tmp/pao-heavy.lock .venv/bin/python benches/notify_bench.py "
                             f"--rounds {args.rounds} --claude {args.claude}")
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for name in ("event_to_webhook", "event_to_command", "hook_wait", "recorder_start"):
            f = result[name]
            print(f"{name:<18} p50 {f['p50_ms']:>7.1f} ms  p95 {f['p95_ms']:>7.1f} ms  max {f['max_ms']:>7.1f} ms")
        print(f"load average before {result['load_average']['before']}, after {result['load_average']['after']}; "
              f"p95 <= {TARGET_P95_S:g} s: {'met' if result['met'] else 'NOT met'}")
        print(f"reproduce: {result['command']}")
    return 0 if result["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
