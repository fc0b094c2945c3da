#!/usr/bin/env python3
"""Capture golden screens of the pinned Codex and Gemini CLIs into plugins/pao_hosts/tests/data/screens/HOST/.

Run from the repository root: ``.venv/bin/python scripts/capture_host_screens.py [codex|gemini ...]``.
As root it re-runs itself inside a loopback-only network namespace. Each scenario
starts the real CLI in a private tmux server against its loopback stub, waits for
the screen it is about (a dialog, the ready prompt, a turn in progress) and writes
that screen to ``<scenario>.txt``. It prints the start-to-ready time of each start.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pao_agents.spec import host_agents
from pao_testing.claude_cli import isolation_problem  # noqa: E402
from pao_testing.hostrun import HostTmux, watch  # noqa: E402

# name -> (preseed, user setup, git folder, drop these variables, wait for this text, then busy turn)
SCENARIOS = {
    "codex": {
        "ready": (True, True, True, (), None, True),
        "trust-dialog": (False, True, True, (), "1. Trust and continue", False),
        "sign-in": (False, False, False, (), "Sign in with ChatGPT", False),
    },
    "gemini": {
        "ready": (True, True, False, (), None, True),
        "trust-dialog": (False, True, False, (), "3. Don't trust", False),
        "auth-dialog": ("trust-only", True, False, (), "(Use Enter to select)", False),
        "key-dialog": (True, True, False, ("GEMINI_API_KEY",), "Paste your API key here", False),
    },
}


def main(hosts: list[str]) -> int:
    if isolation_problem():
        script = "ip link set lo up && exec \"$0\" \"$@\""
        return subprocess.call(["unshare", "--net", "--", "sh", "-c", script, sys.executable, __file__, *hosts])
    for host in hosts or list(SCENARIOS):
        for scenario, spec in SCENARIOS[host].items():
            capture(host, scenario, *spec)
    return 0


def capture(host, scenario, preseed, user_setup, git, drop, wait_text, busy_turn) -> None:
    from pao_core.plugins import load_config
    from pao_hosts.codex import SCREEN as CODEX_SCREEN
    from pao_hosts.gemini import SCREEN as GEMINI_SCREEN
    from pao_agents.spec import SpawnRequest
    from pao_core.plugins import build_plugins
    from pao_testing.host_cases import CASES

    case = CASES[host]
    detector = {"codex": CODEX_SCREEN, "gemini": GEMINI_SCREEN}[host]
    out = ROOT / "plugins" / "pao_hosts" / "tests" / "data" / "screens" / host
    out.mkdir(parents=True, exist_ok=True)
    base, home, folder = _fresh_project(host, scenario, git)
    env = {"HOME": str(home), "PATH": os.environ["PATH"], "TERM": "xterm-256color", "LANG": "C.UTF-8",
           "PAO_HOME": str(base / "pao"), "PAO_CONFIG": os.devnull, case.command_variable: str(case.binary)}
    with case.make_stub() as stub:
        if user_setup:
            env.update(case.user_setup(home, stub))
        os.environ.update(env)
        config = load_config(env)
        profile = next(h for h in host_agents(build_plugins(env), config) if h.name == host)
        request = SpawnRequest(topic="golden screens", folder=str(folder), name=f"golden-{scenario}", host=host)
        (folder / profile.context_file).write_text("Golden-screen project notes.\n")
        if preseed is True:
            profile.preseed(str(folder))
        elif preseed == "trust-only":
            profile.preseed(str(folder))
            (home / ".gemini" / "settings.json").write_text("{}\n")
        for name in drop:
            env.pop(name, None)
        tmux = HostTmux(f"pao-test-{os.getpid()}-{host}")
        try:
            pane = tmux.start("golden", str(folder), profile.command(request), env)
            classify = lambda screen: _state(detector, screen)  # noqa: E731
            if wait_text:
                frames = _until_text(tmux, pane, classify, wait_text)
                _save(out / f"{scenario}.txt", frames[-1].screen)
                print(f"{host} {scenario}: {frames[-1].state} after {frames[-1].at:.2f} s")
                return
            frames = watch(lambda: tmux.capture(pane), classify, lambda s: s in ("ready", "blocked"), 60)
            print(f"{host} {scenario}: {frames[-1].state} after {frames[-1].at:.2f} s")
            _save(out / "ready.txt", frames[-1].screen)
            starting = [f for f in frames if f.state == "busy" and f.screen.strip()]
            if starting:
                _save(out / "starting.txt", starting[-1].screen)
            if busy_turn:
                stub.delay = 4.0
                tmux.paste(pane, profile.nudge(request, str(folder / "CONTEXT_BRIEFING.md")))
                time.sleep(0.5)
                _save(out / "nudge-pasted.txt", tmux.capture(pane))
                tmux.press(pane, profile.submit_key)
                busy = watch(lambda: tmux.capture(pane), classify, lambda s: s == "busy", 20)
                _save(out / "working.txt", busy[-1].screen)
                done = watch(lambda: tmux.capture(pane), classify, lambda s: s == "ready", 30)
                _save(out / "ready-after-turn.txt", done[-1].screen)
        finally:
            tmux.close()


def _fresh_project(host: str, scenario: str, git: bool) -> tuple[Path, Path, Path]:
    """An empty HOME and project folder (a git repository when the scenario wants one) for one capture."""
    base = Path(tempfile.gettempdir()) / "pao-golden" / f"{host}-{scenario}"
    shutil.rmtree(base, ignore_errors=True)
    home, folder = base / "home", base / "project"
    home.mkdir(parents=True)
    folder.mkdir()
    if git:
        subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return base, home, folder


def _until_text(tmux, pane, classify, text):
    frames = watch(lambda: tmux.capture(pane), lambda screen: ("seen" if text in screen else "waiting", None),
                   lambda s: s == "seen", 60)
    time.sleep(0.3)  # let the dialog finish drawing
    screen = tmux.capture(pane)
    state, _ = classify(screen)
    return [*frames[:-1], type(frames[-1])(frames[-1].at, state, None, screen)]


def _state(detector, screen):
    verdict = detector.classify(screen)
    return (verdict.state, verdict.reason) if verdict else ("unknown", None)


def _save(path: Path, screen: str) -> None:
    path.write_text(screen.rstrip("\n") + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
