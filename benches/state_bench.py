#!/usr/bin/env python3
"""From a CLI's hook event to the state pao reads for the agent, with the pinned Claude Code.

``.venv/bin/python benches/state_bench.py [TURNS] [--json]`` (default 20 turns per kind; run it under the
shared lock). As root it re-runs itself inside a loopback-only network namespace. Claude Code runs the way
``pao spawn`` starts it (its per-session hooks appending to ``events.jsonl``) in a private tmux server against
the loopback Messages stub. Each turn submits a prompt; the stub answers it (``ready``: Stop) or refuses it
with HTTP 400 (``failed``: StopFailure). Two clocks per turn:

- hook to state: from the moment the CLI started the hook command (a ``date +%s.%N`` the bench's hook prints
  into a side file just before pao's own append runs) to the first read of pao's state
  (:func:`pao_agents.light.observed_state`, polled every 5 ms) that shows the turn's state;
- reply to state: from the stub's reply (the end of the HTTP answer) to that same read.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pao_testing.claude_cli import rerun_isolated, runs_and_json  # noqa: E402

VERSION = "2.1.332"


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def bench(kind: str, turns: int) -> dict[str, float]:
    from pao_agents.light import observed_state
    from pao_testing.hostrun import HostTmux
    from pao_testing.loopback_stub import Reply

    sys.path.insert(0, str(ROOT / "scripts"))
    import record_states

    base = Path(tempfile.mkdtemp(prefix="pao-state-bench-"))
    home, folder, agent = base / "home", base / "project", base / "agent"
    for path in (home, folder, agent):
        path.mkdir()
    (agent / "events.jsonl").write_text("")
    replied: list[float] = []
    stub = record_states.make_stub("claude-code", "400" if kind == "failed" else "ok")
    answer = stub.respond

    def respond(request):  # the stub's own answer; the time it was handed back
        reply: Reply = answer(request)
        if request.method == "POST" and request.route == "/v1/messages" and isinstance(request.body, dict) \
                and request.body.get("tools"):
            replied.append(time.time())
        return reply

    stub.respond = respond
    with stub:
        env, profile, command = record_states.launch("claude-code", VERSION, "ready-after-turn", stub, home, folder,
                                                     agent, True)
        _time_hooks(agent)
        tmux = HostTmux(f"pao-state-bench-{os.getpid()}")
        extra = {"events": "hooks", "agent_dir": str(agent)}
        hook_lags, reply_lags = [], []
        try:
            pane = tmux.start("bench", str(folder), command, env)
            record_states._submit(tmux, pane, profile, "warm up", "claude-code")
            for turn in range(turns):
                _wait_state(observed_state, extra, ("ready", "failed"), 60)
                time.sleep(0.3)
                started = time.time()
                tmux.paste(pane, f"turn {turn}")
                time.sleep(0.3)
                tmux.press(pane, profile.submit_key)
                _wait_state(observed_state, extra, ("busy",), 30)
                seen = _wait_state(observed_state, extra, (kind,), 60)
                fired = _hook_time(agent, "Stop" if kind == "ready" else "StopFailure", started)
                hook_lags.append(seen - fired)
                reply_lags.append(seen - max(t for t in replied if t >= started))
        finally:
            tmux.close()
    return {"turns": turns, "hook_p50_ms": statistics.median(hook_lags) * 1000, "hook_p95_ms": p95(hook_lags) * 1000,
            "reply_p50_ms": statistics.median(reply_lags) * 1000, "reply_p95_ms": p95(reply_lags) * 1000}


def _time_hooks(agent: Path) -> None:
    """Prefix each hook of the agent's settings with a high-resolution stamp of when the CLI started it."""
    settings_file = agent / "claude-settings.json"
    settings = json.loads(settings_file.read_text())
    stamps = agent / "fired.txt"
    for event, matchers in settings["hooks"].items():
        for matcher in matchers:
            for hook in matcher["hooks"]:
                hook["command"] = f"printf '%s %s\\n' {event} \"$(date +%s.%N)\" >> {stamps}; " + hook["command"]
    settings_file.write_text(json.dumps(settings))


def _hook_time(agent: Path, event: str, since: float) -> float:
    for line in (agent / "fired.txt").read_text().splitlines():
        name, at = line.split()
        if name == event and float(at) >= since:
            return float(at)
    raise RuntimeError(f"no {event} hook fired since {since}")


def _wait_state(observed_state, extra, states, timeout: float) -> float:
    give_up = time.monotonic() + timeout
    while time.monotonic() < give_up:
        if observed_state("busy", extra, None, True)[0] in states:
            return time.time()
        time.sleep(0.005)
    raise TimeoutError(f"state never became {states}")


def main(argv: list[str]) -> int:
    rerun = rerun_isolated(__file__, argv)
    if rerun is not None:
        return rerun
    turns, as_json = runs_and_json(argv, default=20)
    load_before = os.getloadavg()[0]
    results = {kind: bench(kind, turns) for kind in ("ready", "failed")}
    results["load_1min"] = {"before": load_before, "after": os.getloadavg()[0]}
    if as_json:
        print(json.dumps(results))
        return 0
    print(f"load average (1 min): {load_before:.2f} before, {results['load_1min']['after']:.2f} after")
    for kind in ("ready", "failed"):
        row = results[kind]
        print(f"Claude Code {VERSION} {kind}: hook->state p50 {row['hook_p50_ms']:.1f} ms p95 {row['hook_p95_ms']:.1f} ms; "
              f"reply->state p50 {row['reply_p50_ms']:.1f} ms p95 {row['reply_p95_ms']:.1f} ms ({turns} turns)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
