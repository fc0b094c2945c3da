#!/usr/bin/env python3
"""Record labelled state snapshots (screen + hook events) from the pinned CLIs into plugins/pao_agents/tests/data/states/.

Run from the repository root: ``.venv/bin/python scripts/record_states.py [CLI ...] [--only CASE,...]``
where CLI is ``claude-code@VERSION``, ``codex`` or ``gemini`` (default: every pinned one). As root it
re-runs itself inside a loopback-only network namespace. Each case starts the real CLI the way
``pao spawn`` does (the host profile's command, per-session hooks appending to ``events.jsonl``) in a
private tmux server against a loopback stub that answers as the case needs (a reply, a slow reply, a
tool call, HTTP 400, or a closed port), drives it into one state, and writes
``<cli>-<version>/<case>.json``: the label, the screen and the event log exactly as the CLI left them
(under ``heldout/`` for the versions ``PAO_HELDOUT_CLIS`` names instead of the pins: testing/pao_testing/heldout.py).
tests/test_state_snapshots.py replays every file through pao's classification.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pao_testing.claude_cli import isolation_problem, pinned_versions  # noqa: E402
from pao_testing.heldout import heldout_versions  # noqa: E402
from pao_testing.hostrun import HostTmux  # noqa: E402
from pao_testing.hostrun import pinned_versions as host_pins  # noqa: E402
from pao_testing.loopback_stub import Reply  # noqa: E402
from pao_testing.private import root_private_dir  # noqa: E402

OUT = ROOT / "plugins" / "pao_agents" / "tests" / "data" / "states"
if any(heldout_versions(name) for name in ("claude-code", "codex", "gemini")):
    OUT = OUT / "heldout"  # versions pao was not pinned to (PAO_HELDOUT_CLIS): replayed apart from the pins'
ASK = ("AskUserQuestion", {"questions": [{"question": "Which database should the service use?", "header": "Database",
                                          "multiSelect": False, "options": [
                                              {"label": "PostgreSQL", "description": "the shared server"},
                                              {"label": "SQLite", "description": "a local file"}]}]})
TOOLS = {"claude-code": ("Bash", {"command": "touch pao-stub-file", "description": "Create a file"}),
         "codex": ("shell_command", {"command": "touch /pao-stub-file", "sandbox_permissions": "require_escalated",
                             "justification": "write outside the workspace"}),
         "gemini": ("run_shell_command", {"command": "touch pao-stub-file"})}
TRIGGER = "please use the tool"

# case -> (label, reason part, stub: ok|slow|tool|ask|400|refused|nokey (no credentials), preseed, prompt, wait for: event name or screen text)
CASES: dict[str, tuple[str, str | None, str, bool, str | None, str]] = {
    "ready-after-turn": ("ready", None, "ok", True, "say hi", "event:Stop|event:AfterAgent|screen:Ready."),
    "busy": ("busy", None, "slow", True, "think hard", "event:UserPromptSubmit|screen:esc to"),
    "waiting-permission": ("waiting", "permission", "tool", True, TRIGGER, "event:PermissionRequest|screen:Allow|screen:Do you want|screen:Waiting for user"),
    "waiting-question": ("waiting", "question", "ask", True, TRIGGER, "screen:PostgreSQL"),
    "failed-400": ("failed", "invalid request", "400", True, "say hi", "event:StopFailure|screen:400|screen:rror"),
    "failed-refused": ("failed", "connect", "refused", True, "say hi", "screen:etry|screen:rror|screen:Unable to connect"),
    "waiting-trust": ("waiting", "trust", "ok", False, None, "screen:trust"),
    "idle-prompt": ("ready", None, "ok", True, "say hi", "event:Notification"),
    "hooks-off-busy": ("busy", None, "slow", True, "think hard", "screen:esc to"),
    "blocked-login": ("blocked", None, "nokey", True, None, "screen:~blocked"),
}
ONLY_FOR = {"waiting-question": {"claude-code"}, "idle-prompt": {"claude-code"}, "hooks-off-busy": {"claude-code"},
            "blocked-login": {"claude-code", "codex", "gemini"}}


def clis() -> list[tuple[str, str]]:
    found = [("claude-code", version) for version in pinned_versions()]
    found += [(name, version) for name in ("codex", "gemini")
              for version in host_pins(f"PAO_{name.upper()}_VERSIONS")[:1]]
    return found


def main(argv: list[str]) -> int:
    if isolation_problem():
        script = 'ip link set lo up && exec "$0" "$@"'
        return subprocess.call(["unshare", "--net", "--", "sh", "-c", script, sys.executable, __file__, *argv])
    only = next((argv[i + 1].split(",") for i, arg in enumerate(argv) if arg == "--only"), None)
    wanted = [arg for i, arg in enumerate(argv) if not arg.startswith("--") and (i == 0 or argv[i - 1] != "--only")]
    for cli, version in clis():
        if wanted and cli not in wanted and f"{cli}@{version}" not in wanted:
            continue
        for case in CASES:
            if (only and case not in only) or cli not in ONLY_FOR.get(case, {cli}):
                continue
            try:
                record(cli, version, case)
            except Exception as exc:  # one case that cannot be reached is reported, the others still run
                print(f"{cli} {version} {case}: NOT RECORDED: {exc}", file=sys.stderr)
    return 0


def make_stub(cli: str, kind: str) -> Any:
    from pao_testing.host_cases import CASES as HOSTS

    if cli == "claude-code":
        from pao_testing.anthropic_stub import AnthropicStub as base
    else:
        base = type(HOSTS[cli].make_stub())

    class Stub(base):  # type: ignore[misc,valid-type]
        def respond(self, request: Any) -> Reply:
            if kind == "400" and request.method == "POST":
                return Reply.json(_bad_request(cli), status=400)
            if cli == "codex" and kind == "tool" and isinstance(request.body, dict) and request.body.get("tools"):
                self.tool_call = _codex_shell_call(request.body["tools"])
            return super().respond(request)

    stub = Stub(delay=60.0 if kind == "slow" else 0.0)
    if kind in ("tool", "ask"):
        stub.tool_trigger = TRIGGER
        stub.tool_call = ASK if kind == "ask" else TOOLS[cli]
    return stub


def _codex_shell_call(tools: list[Any]) -> tuple[str, dict[str, Any]]:
    """A call of the shell tool Codex offers (its name and parameters differ between versions), asking to run
    outside the sandbox, so Codex asks the user for approval."""
    offered = [tool for tool in tools if isinstance(tool, dict) and tool.get("type") == "function"]
    shell = next((t for t in offered if "exec" in t.get("name", "")), None) or next(
        (t for t in offered if "shell" in t.get("name", "")), {"name": "shell", "parameters": {}})
    properties = (shell.get("parameters") or {}).get("properties") or {}
    arguments: dict[str, Any] = {}
    for key, schema in properties.items():
        if key in ("cmd", "command"):
            arguments[key] = ["touch", "/pao-stub-file"] if schema.get("type") == "array" else "touch /pao-stub-file"
    for key, value in (("sandbox_permissions", "require_escalated"), ("justification", "write outside the workspace")):
        if key in properties:
            arguments[key] = value
    return shell["name"], arguments


def _bad_request(cli: str) -> dict[str, Any]:
    message = "pao-recorder: invalid request (every request is refused)"
    if cli == "claude-code":
        return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    if cli == "gemini":
        return {"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}
    return {"error": {"message": message, "type": "invalid_request_error", "code": "invalid_request"}}


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def record(cli: str, version: str, case: str) -> None:
    # Gemini CLI reads the system-defaults file carrying pao's hooks only below folders root alone owns (not /tmp)
    place = root_private_dir("pao-states-") if cli == "gemini" else contextlib.nullcontext(Path(tempfile.gettempdir()))
    with place as parent:
        _record(cli, version, case, parent / "pao-states" / f"{cli}-{version}-{case}")


def _record(cli: str, version: str, case: str, base: Path) -> None:
    label, reason, kind, preseed, prompt, wait = CASES[case]
    shutil.rmtree(base, ignore_errors=True)
    home, folder, agent = base / "home", base / "project", base / "agent"
    for path in (home, folder, agent):
        path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    (agent / "events.jsonl").write_text("")
    with make_stub(cli, kind) as stub:
        env, profile, command = launch(cli, version, case, stub, home, folder, agent, preseed)
        tmux = HostTmux(f"pao-states-{os.getpid()}")
        try:
            pane = tmux.start("rec", str(folder), command, env)
            if prompt is not None:
                _submit(tmux, pane, profile, prompt, cli)
            screen = _wait(tmux, pane, agent / "events.jsonl", wait, cli)
            events = (agent / "events.jsonl").read_text(encoding="utf-8")
            transcript = _transcript(events)  # while the CLI runs: Gemini CLI writes its chat a moment after its hook
        finally:
            tmux.close()
    save(cli, version, case, label, reason, screen, events, case.startswith("hooks-off") or not events)
    if transcript is not None:
        snapshot_file = OUT / f"{cli}-{version}" / f"{case}.json"
        snapshot = json.loads(snapshot_file.read_text(encoding="utf-8"))
        snapshot["transcript"] = transcript
        snapshot_file.write_text(json.dumps(snapshot, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _transcript(events: str, wait: float = 3.0) -> dict[str, str] | None:
    """The end (last 4 entries) of the transcript the newest event names, kept with the snapshot: what pao reads
    of it (the replay points the events at this copy). Waited for up to ``wait`` seconds."""
    from pao_core.waiting import poll_until

    named = [json.loads(line)["event"].get("transcript_path") for line in events.splitlines() if "transcript_path" in line]
    path = named[-1] if named else None
    if not path or not poll_until(lambda: Path(path).is_file(), wait, cap=0.1):
        return None
    time.sleep(0.5)  # its last entries: the chat is appended in several writes
    return {"path": path, "tail": "".join(Path(path).read_text(encoding="utf-8").splitlines(True)[-4:])}


def launch(cli, version, case, stub, home, folder, agent, preseed):
    """The environment, host profile and command line of one recording, as ``pao spawn`` builds them."""
    from pao_agents.spec import SpawnRequest, host_agents
    from pao_core.plugins import load_config
    from pao_core.plugins import build_plugins
    from pao_testing.claude_cli import cli_path
    from pao_testing.host_cases import CASES as HOSTS, claude_case

    host = claude_case(version) if cli == "claude-code" else HOSTS[cli]
    binary = cli_path(version) if cli == "claude-code" else host.binary
    env = {"HOME": str(home), "PATH": os.environ["PATH"], "TERM": "xterm-256color", "LANG": "C.UTF-8",
           "PAO_HOME": str(home / "pao"), "PAO_CONFIG": os.devnull, host.command_variable: str(binary)}
    env.update(host.user_setup(home, stub))
    if CASES[case][2] == "nokey":  # the user set up no credentials: the CLI's own sign-in
        env.pop("GEMINI_API_KEY", None)
        os.environ.pop("GEMINI_API_KEY", None)  # an earlier case of this run set it
        (home / ".codex" / "config.toml").unlink(missing_ok=True)
    if CASES[case][2] == "refused":
        port = closed_port()
        for key in ("ANTHROPIC_BASE_URL", "GOOGLE_GEMINI_BASE_URL"):
            if key in env:
                env[key] = f"http://127.0.0.1:{port}"
        config = home / ".codex" / "config.toml"
        if config.exists():
            config.write_text(config.read_text().replace(str(stub.port), str(port)))
    os.environ.update(env)
    profile = next(h for h in host_agents(build_plugins(env), load_config(env)) if h.name == cli)
    request = SpawnRequest(topic="state snapshots", folder=str(folder), name="rec", host=cli, agent_dir=str(agent),
                           session_id="6f0c0000-0000-4000-8000-000000000001" if profile.chooses_session_id else None)
    (folder / profile.context_file).write_text("State-snapshot project notes.\n")  # Gemini's ready screen counts it
    if profile.event_channel:
        (agent / "briefing.md").write_text("State-snapshot project notes.\n")
        for name, text in profile.session_files(request).items():
            (agent / name).write_text(text)
        env.update({key: value for key, value in profile.environment(request).items() if value is not None})
    if preseed:
        profile.preseed(str(folder))
    if cli == "claude-code":
        _claude_extras(home, folder, case)
    return env, profile, profile.command(request)


def _claude_extras(home: Path, folder: Path, case: str) -> None:
    config_file = home / ".claude.json"
    config = json.loads(config_file.read_text())
    config["messageIdleNotifThresholdMs"] = 1500  # idle_prompt after 1.5 s, not a minute
    config_file.write_text(json.dumps(config, indent=2))
    if CASES[case][2] == "nokey":  # the key was never approved: Claude Code asks whether to use it
        config.pop("customApiKeyResponses", None)
        config_file.write_text(json.dumps(config, indent=2))
    if case.startswith("hooks-off"):
        (folder / ".claude").mkdir(exist_ok=True)
        (folder / ".claude" / "settings.local.json").write_text('{"disableAllHooks": true}\n')


def _submit(tmux, pane, profile, prompt, cli) -> None:
    from pao_agents.spec import ScreenReader, readiness_detectors
    from pao_core.plugins import load_config
    from pao_core.plugins import build_plugins

    plugins = build_plugins()
    reader = ScreenReader.for_host(cli, readiness_detectors(plugins, load_config()), plugins)
    _poll(lambda: reader.classify(tmux.capture(pane)).state in ("ready", "blocked"), 60, lambda: tmux.capture(pane))
    time.sleep(0.5)
    tmux.paste(pane, prompt)
    time.sleep(0.5)
    tmux.press(pane, profile.submit_key)


def _wait(tmux, pane, log: Path, wait: str, cli: str) -> str:
    """Wait until one of ``wait``'s alternatives holds (``event:NAME`` in the log, ``screen:TEXT`` on screen,
    ``screen:~STATE`` pao's screen verdict); then a moment for the screen to settle; return the screen."""
    from pao_agents.spec import ScreenReader, readiness_detectors
    from pao_core.plugins import load_config
    from pao_core.plugins import build_plugins

    plugins = build_plugins()
    reader = ScreenReader.for_host(cli, readiness_detectors(plugins, load_config()), plugins)

    def holds() -> bool:
        screen, events = tmux.capture(pane), log.read_text(encoding="utf-8")
        for alternative in wait.split("|"):
            kind, _, what = alternative.partition(":")
            if kind == "event" and f'"hook_event_name":"{what}"' in events.replace(" ", ""):
                return True
            if kind == "screen" and (reader.classify(screen).state == what[1:] if what.startswith("~") else what in screen):
                return True
        return False

    _poll(holds, 90, lambda: tmux.capture(pane))
    time.sleep(1.0)
    return tmux.capture(pane)


def _poll(check: Callable[[], bool], timeout: float, screen: Callable[[], str]) -> None:
    give_up = time.monotonic() + timeout
    while not check():
        if time.monotonic() > give_up:
            raise TimeoutError(f"not reached within {timeout:.0f} s; the screen:\n{screen()}")
        time.sleep(0.1)


def save(cli, version, case, label, reason, screen, events, screen_only) -> None:
    folder = OUT / f"{cli}-{version}"
    folder.mkdir(parents=True, exist_ok=True)
    snapshot = {"cli": cli, "version": version, "case": case, "label": label, "reason": reason,
                "source": "screen" if screen_only else "hooks", "recorded": "scripts/record_states.py",
                "screen": screen.rstrip("\n") + "\n", "events": events}
    (folder / f"{case}.json").write_text(json.dumps(snapshot, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    names = [json.loads(line)["event"].get("hook_event_name") for line in events.splitlines() if line.strip()]
    print(f"{cli} {version} {case}: recorded ({label}); events {names}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
