#!/usr/bin/env python3
"""Which per-session channel carries pao's briefing best: ``--append-system-prompt-file`` or a SessionStart hook's ``additionalContext``.

``.venv/bin/python benches/session_channel_probe.py DIR ["2.1.332 2.0.77"] ["file hook"]`` (as root, inside
``unshare --net``: ``unshare --net -- sh -c 'ip link set lo up && .venv/bin/python benches/session_channel_probe.py /tmp/probe'``).
For each pinned Claude Code version and channel, the CLI starts with the task as its first prompt, a session id,
and hooks appending to an event log; it prints where the briefing's marker arrived (system prompt, first user
message, any later message), whether any ``.env`` byte reached the stub through the ``@`` forms in the briefing,
the hook events and their session ids, and the files left in the folder.
"""
import json
import os
import sys
import time
import uuid
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pao_agents.agentdir import append_command
from pao_testing.anthropic_stub import AnthropicStub, _texts
from pao_testing.claude_cli import PrivateTmux, cli_environment, cli_path, seed_home

def run(version, mode, root, stub, tmux):
    marker = f"MARK-{uuid.uuid4().hex[:10]}"
    task = f"TASK-{uuid.uuid4().hex[:10]} do the thing"
    home = seed_home(root / f"home-{version}-{mode}")
    folder = root / f"folder-{version}-{mode}"; folder.mkdir()
    (folder / ".env").write_text("SECRET=ENVSECRET123\n")
    cfg = json.loads((home/".claude.json").read_text()); cfg["projects"] = {str(folder): {"hasTrustDialogAccepted": True}}
    cfg["bypassPermissionsModeAccepted"] = True
    (home/".claude.json").write_text(json.dumps(cfg))
    agent = root / f"agent-{version}-{mode}"; agent.mkdir(mode=0o700)
    brief = agent / "briefing.md"; brief.write_text(f"# Briefing\nFact: {marker}\n*@.env*\n**@.env**\n_@.env_\n[a](b)@.env\n@.env\n")
    log = agent / "events.jsonl"
    hooks = {ev: [{"hooks": [{"type": "command", "command": append_command(log)}]}] for ev in ("SessionStart", "UserPromptSubmit", "Stop", "Notification")}
    if mode == "hook":
        ctx = agent / "ctx.json"
        ctx.write_text(json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": brief.read_text()}}))
        hooks["SessionStart"][0]["hooks"].append({"type": "command", "command": f"cat '{ctx}'"})
    settings = agent / "settings.json"; settings.write_text(json.dumps({"hooks": hooks}))
    sid = str(uuid.uuid4())
    cmd = [str(cli_path(version)), "--dangerously-skip-permissions", "--session-id", sid, "--settings", str(settings)]
    if mode == "file":
        cmd += ["--append-system-prompt-file", str(brief)]
    cmd += [task]
    env = cli_environment(home, stub.url)
    t0 = time.monotonic()
    target = tmux.start(f"p{uuid.uuid4().hex[:6]}", str(folder), cmd, env)
    req = stub.wait_for_message(task, timeout=60, where=lambda r: r.is_conversation)
    t1 = time.monotonic()
    if req is None:
        print(version, mode, "NO REQUEST", tmux.capture(target)); return
    system = "\n".join(_texts(req.body.get("system")))
    time.sleep(3)
    events = [json.loads(l) for l in log.read_text().splitlines()] if log.exists() else []
    names = [e["event"].get("hook_event_name") for e in events]
    sids = {e["event"].get("session_id") for e in events}
    transcripts = list((home/".claude/projects").glob("*/*.jsonl"))
    alltext = "\n".join(r.text() for r in stub.messages())
    print(f"{version} {mode}: first request with task {t1-t0:.2f}s; marker in system={marker in system} in first_user={marker in req.first_user_text()} anywhere_first={marker in req.text()} anywhere_later={any(marker in r.text() for r in stub.messages())}; "
          f"ENV leak={'ENVSECRET123' in alltext}; events={names}; sids={sids}=={sid}: {sids=={sid}}; transcripts={[p.stem for p in transcripts]}")
    print("  files in folder:", sorted(p.name for p in folder.iterdir()))
    print("  screen tail:", tmux.capture(target).strip().splitlines()[-3:])

root = Path(sys.argv[1])
root.mkdir(exist_ok=True)
versions = sys.argv[2] if len(sys.argv) > 2 else "2.1.332 2.0.77"
modes = sys.argv[3] if len(sys.argv) > 3 else "file hook"
with AnthropicStub() as stub:
    tmux = PrivateTmux(f"probe-{os.getpid()}")
    try:
        for version in versions.split():
            for mode in modes.split():
                run(version, mode, root, stub, tmux)
    finally:
        tmux.kill_server()
