#!/usr/bin/env python3
"""pao beside cli-agent-orchestrator 2.5.4, driving the same real Claude Code against the same loopback stub.

``.venv/bin/python benches/cao_session_bench.py [ROUNDS] [--claude VERSION] [--json]`` (default 7
rounds, Claude Code 2.1.332). As root it re-runs itself inside a loopback-only network namespace.

Each round launches one agent with each tool, in alternating order, with a fresh project
folder and a task of its own, then sends it one message and ends it:

- **launch -> task at the model**: from the start of ``pao spawn TASK`` / ``cao launch
  --headless --async --auto-approve TASK`` to the first conversation request at the stub
  whose text carries TASK.
  For pao it also says where that time went (``pao_steps_p50_s``): each spawn step as ``pao spawn``
  reports it on stderr (``1 topic`` ... ``7 nudge``, seconds each), and the first time each event
  reached the agent's event log (the CLI's hooks, ``McpToolsListed`` from ``pao mcp``), in seconds
  from the launch's start.
- **send -> message at the model**: once the tool reports the agent idle, from the start of
  ``pao send NAME MSG`` / ``cao session send SESSION MSG --async`` to the first request
  carrying MSG.

cao is installed from PyPI into a virtual environment of its own (``.cache/bench/cao-2.5.4``,
the one ``benches/cao_startup_bench.py`` makes), before the bench enters its network namespace. Its server (``cao-server``, a FastAPI app)
runs for the whole bench on a loopback port, started before the first round and not timed,
as a user keeps it running; its tmux server is a private one (``TMUX_TMPDIR``). cao runs its
default Claude Code agent profile (``developer``: a system-prompt file and its MCP server);
pao runs its default spawn (briefing in a system-prompt file, hooks, its session MCP server)
with an empty configuration (no memory store). Each tool has a HOME of its own, pre-seeded
the same way (onboarding done, the dummy key approved), and its claude on PATH. The first
round is a warm-up (tmux servers, page cache) and is not counted. A task or message that does not
reach the stub within 120 s counts as lost (the reason, and cao's last screen, go to stderr).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benches"))

from cao_startup_bench import CAO_VENV, cao_binary  # noqa: E402
from pao_testing.anthropic_stub import AnthropicStub  # noqa: E402
from pao_testing.claude_cli import cli_environment, cli_path, rerun_isolated, seed_home  # noqa: E402

DEADLINE = 120.0
"""Seconds a task or message may take to reach the stub before the run counts as lost."""
STEP_LINE = re.compile(r"^pao: (\d\S* .+?)\s+([\d.]+) ms ", re.MULTILINE)
"""A step of ``pao spawn``'s report on stderr: its label and milliseconds."""


def cao_ready() -> Path:
    """cao's venv, made again when its ``bin/cao`` names an interpreter that is gone (a moved cache)."""
    binary = CAO_VENV / "bin" / "cao"
    if binary.exists():
        interpreter = binary.read_text(encoding="utf-8", errors="replace").splitlines()[0].removeprefix("#!")
        if not Path(interpreter).exists():
            shutil.rmtree(CAO_VENV)
    return cao_binary().parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    if done.returncode:
        raise RuntimeError(f"{' '.join(argv[:3])} failed ({done.returncode}): {(done.stderr or done.stdout).strip()[-800:]}")
    return done


def until(read: Callable[[], object], timeout: float = DEADLINE, interval: float = 0.2) -> object:
    give_up = time.monotonic() + timeout
    while time.monotonic() < give_up:
        value = read()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError("gave up waiting")


class Pao:
    name = "pao"

    def __init__(self, base: Path, stub: AnthropicStub, version: str) -> None:
        home = seed_home(base / "home-pao")
        self.env = {**os.environ, **cli_environment(home, stub.url), "PAO_HOME": str(base / "pao"),
                    "PAO_CONFIG": str(base / "pao.toml"), "PAO_CLAUDE_COMMAND": str(cli_path(version)),
                    "PAO_TMUX_SOCKET": f"pao-bench-{uuid.uuid4().hex[:8]}"}
        (base / "pao.toml").write_text("")
        self.pao = str(Path(sys.executable).with_name("pao"))
        self.steps: dict[str, float] = {}

    def launch(self, name: str, folder: Path, task: str) -> None:
        done = run([self.pao, "spawn", task, "--folder", str(folder), "--name", name], self.env)
        self.steps = {f"step {label.strip()}": float(ms) / 1000 for label, ms in STEP_LINE.findall(done.stderr)}

    def events(self, name: str, since: float) -> dict[str, float]:
        """Seconds from ``since`` (epoch) to the first time each event reached ``name``'s event log."""
        from pao_agents.agentdir import EVENTS, read_events

        first: dict[str, float] = {}
        for event in read_events(Path(self.env["PAO_HOME"], "agents", name, EVENTS)):
            if isinstance(event.get("at"), (int, float)):
                first.setdefault(f"event {event['name']}", event["at"] - since)
        return first

    def wait_idle(self, name: str) -> None:
        def ready() -> bool:
            status = json.loads(run([self.pao, "status", name, "--json"], self.env).stdout)
            return status["observed"]["state"] == "ready"

        until(ready)

    def send(self, name: str, message: str) -> None:
        run([self.pao, "send", name, message], self.env)

    def screen(self, name: str) -> str:
        return run([self.pao, "status", name], self.env).stdout.strip()

    def end(self, name: str) -> None:
        run([self.pao, "kill", name], self.env)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.env["PAO_TMUX_SOCKET"], "kill-server"], capture_output=True)


class Cao:
    name = "cao"

    def __init__(self, base: Path, stub: AnthropicStub, version: str) -> None:
        home = seed_home(base / "home-cao")
        bin_dir = base / "cao-bin"
        bin_dir.mkdir()
        (bin_dir / "claude").symlink_to(cli_path(version))
        # cao types `claude ...` into a login shell, whose /etc/profile resets PATH: the user's profile adds it back
        (home / ".bash_profile").write_text(f'export PATH="{bin_dir}:$PATH"\n')
        (base / "cao-tmux").mkdir(mode=0o700)
        self.port = free_port()
        self.bin = cao_ready()
        self.env = {**os.environ, **cli_environment(home, stub.url), "SHELL": "/bin/bash",
                    "PATH": f"{bin_dir}:{self.bin}:{os.environ.get('PATH', '/usr/bin:/bin')}",
                    "CAO_HOME_DIR": str(base / "cao"), "CAO_API_PORT": str(self.port), "TMUX_TMPDIR": str(base / "cao-tmux")}
        self.api = f"http://127.0.0.1:{self.port}"
        self.log = open(base / "cao-server.log", "w")  # noqa: SIM115 - open for the server's lifetime
        started = time.perf_counter()
        self.server = subprocess.Popen([str(self.bin / "cao-server")], env=self.env, stdout=self.log,
                                       stderr=subprocess.STDOUT, cwd=base)
        until(lambda: self._get("/health") is not None, timeout=60)
        self.server_start_ms = round((time.perf_counter() - started) * 1000, 1)
        self.sessions: dict[str, str] = {}

    def _get(self, path: str) -> object:
        try:
            with urllib.request.urlopen(self.api + path, timeout=5) as response:
                return json.load(response)
        except OSError:
            return None

    def launch(self, name: str, folder: Path, task: str) -> None:
        done = run([str(self.bin / "cao"), "launch", "--agents", "developer", "--provider", "claude_code", "--headless",
                    "--async", "--auto-approve", "--session-name", name, "--working-directory", str(folder), task],
                   self.env, cwd=folder)
        self.sessions[name] = re.search(r"Session created: (\S+)", done.stdout).group(1)

    def wait_idle(self, name: str) -> None:
        terminals = self._get(f"/sessions/{self.sessions[name]}/terminals")
        terminal = terminals[0]["id"]
        until(lambda: (self._get(f"/terminals/{terminal}") or {}).get("status") in ("idle", "completed"))

    def send(self, name: str, message: str) -> None:
        run([str(self.bin / "cao"), "session", "send", self.sessions[name], message, "--async"], self.env)

    def screen(self, name: str) -> str:
        done = subprocess.run(["tmux", "capture-pane", "-p", "-t", self.sessions.get(name, name)], env=self.env,
                              capture_output=True, text=True)
        return done.stdout.strip() or done.stderr.strip()

    def end(self, name: str) -> None:
        run([str(self.bin / "cao"), "shutdown", "--session", self.sessions.pop(name)], self.env)

    def close(self) -> None:
        self.server.terminate()
        self.server.wait(timeout=30)
        self.log.close()
        subprocess.run(["tmux", "kill-server"], env=self.env, capture_output=True)


def timed(stub: AnthropicStub, action: Callable[[], None], token: str) -> float | None:
    """Seconds from the start of ``action`` to the first conversation request carrying ``token``; ``None``: lost."""
    started = time.time()
    try:
        action()
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        print(f"cao_session_bench: {exc}", file=sys.stderr)
        return None
    found = stub.wait_for_message(token, timeout=DEADLINE, where=lambda request: request.is_conversation)
    return None if found is None else found.received_at - started


def one_round(tool: Pao | Cao, stub: AnthropicStub, base: Path, round_: int) -> dict[str, float | None]:
    name = f"{tool.name}-bench-{round_}"
    folder = base / name
    folder.mkdir()
    task, message = (f"{kind} {uuid.uuid4().hex[:10]}" for kind in ("Bench task", "Bench message"))
    started = time.time()
    figures: dict[str, float | None] = {"launch_s": timed(stub, lambda: tool.launch(name, folder, task), task)}
    if isinstance(tool, Pao):
        figures.update(tool.steps)
        figures.update(tool.events(name, started))
    try:
        if figures["launch_s"] is None:
            print(f"cao_session_bench: {tool.name} round {round_}: the task was lost; screen:\n{tool.screen(name)}",
                  file=sys.stderr)
        else:  # no send to an agent that never got its task
            tool.wait_idle(name)
            figures["send_s"] = timed(stub, lambda: tool.send(name, message), message)
    except (RuntimeError, TimeoutError) as exc:  # never idle, or the send failed: the message is lost
        figures["send_s"] = None
        print(f"cao_session_bench: {tool.name} round {round_}: {exc}", file=sys.stderr)
    finally:
        with contextlib.suppress(RuntimeError, KeyError):
            tool.end(name)
    return figures


def main(rounds: int, version: str) -> dict[str, object]:
    base = Path(tempfile.mkdtemp(prefix="pao-cao-bench-"))
    keys = ("launch_s", "send_s")
    samples: dict[str, dict[str, list[float | None]]] = {tool: {key: [] for key in keys} for tool in ("pao", "cao")}
    steps: dict[str, list[float | None]] = {}  # pao's launch, step by step
    with AnthropicStub() as stub:
        tools = [Pao(base, stub, version), Cao(base, stub, version)]
        try:
            for round_ in range(rounds + 1):
                for tool in tools if round_ % 2 else tools[::-1]:
                    figures = one_round(tool, stub, base, round_)
                    if round_:  # round 0 warms up
                        for key, value in figures.items():
                            (samples[tool.name][key] if key in keys else steps.setdefault(key, [])).append(value)
        finally:
            for tool in tools:
                tool.close()
            shutil.rmtree(base, ignore_errors=True)  # the homes, folders and logs of every round

    def median(values: list[float | None]) -> float | None:
        measured = [value for value in values if value is not None]
        return round(statistics.median(measured), 2) if measured else None

    medians = {tool: {key: median(values) for key, values in figures.items()} for tool, figures in samples.items()}
    return {
        "claude_code": version,
        "rounds": rounds,
        "p50_s": medians,
        "pao_steps_p50_s": dict(sorted(((key, median(values)) for key, values in steps.items()),
                                       key=lambda pair: pair[1] or 0)),
        "runs": {tool: {key: len(values) for key, values in figures.items()} for tool, figures in samples.items()},
        "lost": {tool: {key: values.count(None) for key, values in figures.items()} for tool, figures in samples.items()},
        "ratio_cao_over_pao": {key: round(medians["cao"][key] / medians["pao"][key], 1)
                               if medians["cao"][key] and medians["pao"][key] else None for key in keys},
        "all_s": {tool: {key: [None if v is None else round(v, 2) for v in values] for key, values in figures.items()}
                  for tool, figures in samples.items()},
        "cao_server_start_ms": tools[1].server_start_ms,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def runs_and_version(argv: list[str], default: int = 7) -> tuple[int, str]:
    """A Claude Code bench's arguments: ``[RUNS] [--claude VERSION] [--json]``."""
    version = "2.1.332"
    if "--claude" in argv:
        at = argv.index("--claude")
        version = argv[at + 1]
        argv = argv[:at] + argv[at + 2:]
    numbers = [arg for arg in argv if arg != "--json"]
    return (int(numbers[0]) if numbers else default), version


if __name__ == "__main__":
    cao_ready()  # from PyPI, before the loopback-only namespace below cuts the network off
    code = rerun_isolated(__file__, sys.argv[1:])
    if code is not None:
        sys.exit(code)
    json.dump(main(*runs_and_version(sys.argv[1:])), sys.stdout, indent=2)
    print()
