#!/usr/bin/env python3
"""From the CLI's hook event to the state pao records for the agent, and to its notification, with no monitor.

``.venv/bin/python benches/state_bench.py [TURNS] [--claude VERSION] [--json]`` (default 10 turns of each kind,
the newest pinned Claude Code; run it under the shared lock, once per pin). As root it re-runs itself inside a
loopback-only network namespace.

The agent is started as a user starts one: ``pao spawn`` with the whole plugin set installed (no
``PAO_LOAD_PLUGINS``), an empty configuration but for ``[notify] webhook`` (a receiver on 127.0.0.1, ``collapse
= 0``), the real pinned Claude Code in a private tmux server against the loopback Messages stub. No ``pao monitor``
and no ``pao status`` runs: only the CLI's own hooks record the state. Each turn is a ``pao send``; the stub holds
its reply until pao has recorded the agent busy, then answers it (``ready``: Stop) or refuses it with HTTP 400
(``failed``: StopFailure with 2.1.332 and newer, Stop and the transcript's API error with 2.0.77).

The event's clock is a hook of the user's own ``~/.claude/settings.json`` on the same event (``date +%s.%N``):
the CLI starts the hooks of one event together, so it stamps the moment the CLI fired the event, without
touching pao's hook. Per turn:

- ``event_to_recorded``: to the first read of the registry (``agents.json``, polled every 5 ms) holding the
  turn's state: what ``pao list`` and the notifier see (issue 30: the p95 from the CLI's event to pao's recorded
  state);
- ``event_to_notified``: to the webhook receiver holding the notification's POST (issue 30: p95 <= 2 s).
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
import uuid
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pao_testing.anthropic_stub import AnthropicStub  # noqa: E402
from pao_testing.claude_cli import (cli_environment, cli_path, pinned_versions, rerun_isolated,  # noqa: E402
                                    seed_home)
from pao_testing.loopback_stub import Reply  # noqa: E402

NAME = "bench"
POLL = 0.005
NOTIFY_TARGET_S = 2.0
NOTICE = {"ready": "has finished its turn", "failed": "has failed"}
"""What the notification of each kind of turn says (the webhook's text)."""
REFUSAL = {"type": "error", "error": {"type": "invalid_request_error", "message": "state bench: refused"}}


class TurnStub(AnthropicStub):
    """The Messages stub; while ``failing``, every request is answered HTTP 400 (a failed turn)."""

    failing = False

    def respond(self, request: Any) -> Reply:
        if self.failing and request.method == "POST":
            return Reply.json(REFUSAL, status=400)
        return super().respond(request)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def wait_for(probe: Callable[[], Any], timeout: float, what: str) -> Any:
    from pao_core.waiting import poll_until

    found = poll_until(probe, timeout, first=POLL, cap=POLL)
    if not found:
        raise TimeoutError(f"no {what} within {timeout:g} s")
    return found


def stamping_home(home: Path, version: str) -> Path:
    """A returning user's home whose own settings stamp each turn-ending event into ``fired.txt``."""
    seed_home(home)
    stamps = home / "fired.txt"
    from pao_hosts.claude_code import ClaudeCode, ClaudeCodeOptions

    # the turn-ending events pao hooks for this version (an older one refuses a settings file naming StopFailure)
    hooked = ClaudeCode(options=ClaudeCodeOptions(command=str(cli_path(version)))).hook_events()
    events = [event for event in ("Stop", "StopFailure") if event in hooked]
    hooks = {event: [{"hooks": [{"type": "command", "command": f"printf '%s %s\\n' {event} \"$(date +%s.%N)\" >> "
                                 f"{stamps}"}]}] for event in events}
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    return stamps


def stamps_after(stamps: Path, count: int) -> float | None:
    """The time of the first event stamped after the first ``count`` stamps."""
    lines = stamps.read_text().splitlines() if stamps.exists() else []
    return float(lines[count].split()[1]) if len(lines) > count else None


def recorded_state(home: Path) -> str:
    from pao_agents.registry import JsonRegistry

    record = JsonRegistry(home).get(NAME)
    return record.state if record is not None else ""


def pao(env: dict[str, str], *args: str) -> None:
    done = subprocess.run([str(Path(sys.executable).with_name("pao")), *args], env=env, capture_output=True,
                          text=True, timeout=120)
    if done.returncode:
        raise RuntimeError(f"pao {args[0]} failed: {done.stderr.strip()[-600:]}")


def one_turn(env: dict[str, str], stub: TurnStub, receiver: Any, stamps: Path, kind: str, turn: int
             ) -> tuple[float, float]:
    """One turn of ``kind``: seconds from the CLI's event to the recorded state, and to the notification."""
    home = Path(env["PAO_HOME"])
    fired = len(stamps.read_text().splitlines()) if stamps.exists() else 0
    with stub.holding():  # the reply waits until the turn's start is recorded: ready/failed is then a change
        pao(env, "send", NAME, f"state bench {kind} turn {turn}")
        wait_for(lambda: recorded_state(home) == "busy", 30, "busy recorded for the turn")
    event = wait_for(lambda: stamps_after(stamps, fired), 60, f"{kind} event from the CLI")
    recorded = wait_for(lambda: recorded_state(home) == kind and time.time(), 30, f"{kind} recorded")
    says = NOTICE[kind]
    notified = wait_for(lambda: [post.received_at for post in receiver.requests
                                 if post.received_at >= event and says in json.dumps(post.body)],
                        30, f"the {kind} notice")
    return recorded - event, notified[0] - event


def figures(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(values) * 1000, 1), "p95_ms": round(p95(values) * 1000, 1),
            "max_ms": round(max(values) * 1000, 1)}


def bench(version: str, turns: int) -> dict[str, Any]:
    from pao_testing.webhook_stub import WebhookReceiver

    base = Path(tempfile.mkdtemp(prefix="pao-state-bench-"))
    stamps, folder = stamping_home(base / "home", version), base / "project"
    folder.mkdir()
    results: dict[str, Any] = {}
    with TurnStub() as stub, WebhookReceiver() as receiver:
        limiting = ("PAO_LOAD_PLUGINS", "PAO_DISABLE_PLUGINS")  # the whole plugin set, as a user has it
        env = {key: value for key, value in os.environ.items() if key not in limiting}
        env.update(cli_environment(base / "home", stub.url), PAO_HOME=str(base / "pao"),
                   PAO_CONFIG=str(base / "pao.toml"), PAO_CLAUDE_COMMAND=str(cli_path(version)),
                   PAO_TMUX_SOCKET=f"pao-state-bench-{uuid.uuid4().hex[:8]}")
        (base / "pao.toml").write_text(f'[notify]\nwebhook = "{receiver.url}/hook/bench"\ncollapse = 0\n')
        pao(env, "spawn", "state bench: answer each turn briefly", "--folder", str(folder), "--name", NAME)
        try:
            wait_for(lambda: recorded_state(Path(env["PAO_HOME"])) == "ready", 60, "ready recorded for the first turn")
            for kind in ("ready", "failed"):
                stub.failing = kind == "failed"
                lags = [one_turn(env, stub, receiver, stamps, kind, turn) for turn in range(turns)]
                results[kind] = {"turns": turns, "event_to_recorded": figures([lag[0] for lag in lags]),
                                 "event_to_notified": figures([lag[1] for lag in lags])}
        finally:
            pao(env, "kill", NAME)
            subprocess.run(["tmux", "-L", env["PAO_TMUX_SOCKET"], "kill-server"], capture_output=True, check=False)
    return results


def main(argv: list[str]) -> int:
    rerun = rerun_isolated(__file__, argv)
    if rerun is not None:
        return rerun
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("turns", nargs="?", type=int, default=10)
    parser.add_argument("--claude", default=max(pinned_versions(), key=lambda v: tuple(map(int, v.split(".")))))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    before = os.getloadavg()[0]
    results = {"claude_code": args.claude, **bench(args.claude, args.turns)}
    results["load_1min"] = {"before": round(before, 2), "after": round(os.getloadavg()[0], 2)}
    results["met"] = all(results[kind]["event_to_notified"]["p95_ms"] <= NOTIFY_TARGET_S * 1000
                         for kind in ("ready", "failed"))
    results["command"] = (f"flock /tmp/pao-heavy.lock .venv/bin/python benches/state_bench.py {args.turns} "
                          f"--claude {args.claude}")
    if args.json:
        print(json.dumps(results))
        return 0
    print(f"Claude Code {args.claude}, {args.turns} turns of each kind; load average (1 min) "
          f"{results['load_1min']['before']:.2f} before, {results['load_1min']['after']:.2f} after")
    for kind in ("ready", "failed"):
        for clock in ("event_to_recorded", "event_to_notified"):
            row = results[kind][clock]
            print(f"{kind:<7} {clock:<18} p50 {row['p50_ms']:>7.1f} ms  p95 {row['p95_ms']:>7.1f} ms  "
                  f"max {row['max_ms']:>7.1f} ms")
    print(f"event to notification p95 <= {NOTIFY_TARGET_S:g} s: {'met' if results['met'] else 'NOT met'}")
    print(f"reproduce: {results['command']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
