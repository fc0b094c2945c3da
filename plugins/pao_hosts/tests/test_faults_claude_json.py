"""Fault suite, ``~/.claude.json``: 10 processes pre-seed 10 folders while another rewrites other keys.

The rewriter behaves as Claude Code does when it saves its state: it takes the
``~/.claude.json.lock`` directory (proper-lockfile's ``mkdir`` protocol, written here
independently of pao's code), reads the file, changes keys of its own, writes a
temporary file and renames it over the original, and removes the lock directory.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

from pao_hosts.claude_code import ClaudeCode, ClaudeCodeOptions

PRESEEDERS = 10

CLAUDE_LIKE_REWRITER = r"""
import json, os, sys, time
config, stop = sys.argv[1], sys.argv[2]
lock = config + ".lock"
rounds = 0
while not os.path.exists(stop) or rounds < 20:
    while True:
        try:
            os.mkdir(lock)
            break
        except FileExistsError:
            time.sleep(0.002)
    try:
        with open(config, encoding="utf-8") as handle:
            data = json.load(handle)
        rounds += 1
        data["numStartups"] += 1
        data.setdefault("tipsHistory", {})[f"tip-{rounds}"] = rounds
        data["lastRewrite"] = rounds
        with open(config + ".tmp-claude", "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2)
        os.replace(config + ".tmp-claude", config)
    finally:
        os.rmdir(lock)
    time.sleep(0.003)
print(rounds)
"""


def _preseed(home: str, folder: str) -> None:
    ClaudeCode(ClaudeCodeOptions(permission_mode="bypass"), home=Path(home)).preseed(folder)  # every key pao writes


def test_ten_preseeds_and_a_rewriter_at_once_keep_every_key(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    config = home / ".claude.json"
    unrelated = {
        "numStartups": 5,
        "userID": "u-123",
        "oauthAccount": {"emailAddress": "sam@example.test"},
        "projects": {"/elsewhere": {"allowedTools": ["Bash"], "history": [{"display": "hi"}]}},
    }
    config.write_text(json.dumps(unrelated))
    folders = [tmp_path / f"agent-{n}" for n in range(PRESEEDERS)]
    for folder in folders:
        folder.mkdir()
    stop = tmp_path / "stop"
    rewriter = subprocess.Popen([sys.executable, "-c", CLAUDE_LIKE_REWRITER, str(config), str(stop)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    context = multiprocessing.get_context("spawn")
    seeders = [context.Process(target=_preseed, args=(str(home), str(folder))) for folder in folders]
    for process in seeders:
        process.start()
    for process in seeders:
        process.join(60)
        assert process.exitcode == 0
    stop.touch()
    out, err = rewriter.communicate(timeout=60)
    assert rewriter.returncode == 0, err
    rounds = int(out)

    data = json.loads(config.read_text(encoding="utf-8"))
    for folder in folders:
        assert data["projects"][str(folder)]["hasTrustDialogAccepted"] is True
    # every key pao does not own is as the other writer left it: none of its rounds was lost
    assert data["numStartups"] == 5 + rounds and data["lastRewrite"] == rounds
    assert data["tipsHistory"] == {f"tip-{n}": n for n in range(1, rounds + 1)}
    assert data["userID"] == "u-123" and data["oauthAccount"] == unrelated["oauthAccount"]
    assert data["projects"]["/elsewhere"] == unrelated["projects"]["/elsewhere"]
    assert data["bypassPermissionsModeAccepted"] is True
    assert not (home / ".claude.json.lock").exists()
    assert json.loads((home / ".claude" / "settings.json").read_text())["skipDangerousModePermissionPrompt"] is True
    leftovers = [p.name for p in home.iterdir() if p.name.endswith((".tmp", ".tmp-claude"))]
    assert leftovers == []
    assert os.stat(config).st_size > 0 and time.time() - os.stat(config).st_mtime < 120
