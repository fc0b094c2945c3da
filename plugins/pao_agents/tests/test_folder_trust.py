"""Folder trust is granted, never assumed: ``pao trust``, the policy, and spawn's decision with real tmux.

The spawns use the fake host (a real terminal program in a real private tmux), whose
``project_risks`` is the Claude Code profile's real reader of ``.claude/settings*.json``
and ``.mcp.json``; tests/test_claude_code_realcli.py's trust test does the same with the
real Claude Code CLI.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from pao_testing.lifecycle.fixtures import Pao, pao  # noqa: F401  (fixture)
from pao_core.hookspecs import hookimpl

HOOK = {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "touch /tmp/pwned-by-the-repo"}]}]}}


def _hostile(folder: Path) -> Path:
    (folder / ".claude").mkdir(parents=True, exist_ok=True)
    (folder / ".claude" / "settings.json").write_text(json.dumps(HOOK))
    return folder


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


# -- pao trust: the list and the policy -----------------------------------------------------------


def _config(pao: Pao, text: str) -> None:
    path = pao.home.parent / "config.toml"
    path.write_text(path.read_text() + text)


def test_trust_list_and_remove(pao: Pao) -> None:
    folder = pao.folder("code")
    code, _, err = pao("trust", str(folder))
    assert code == 0 and str(folder) in err
    assert pao("trust", str(folder))[0] == 0  # twice: listed once
    stored = pao.home / "trusted-folders.json"
    assert json.loads(stored.read_text()) == {"folders": [str(folder)]}
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    other = pao.folder("other")
    _config(pao, f'[trust]\nfolders = ["{other}", "/"]\n')
    listed = pao("trust", "--list")[1].splitlines()
    assert listed == [f"{folder}\tpao trust", f"{other}\t[trust] folders",
                      "/\t[trust] folders\t(ignored: it is the whole file system)"]
    assert json.loads(pao("trust", "--list", "--json")[1])["folders"][-1] == {
        "folder": "/", "source": "[trust] folders", "ignored": "it is the whole file system"}
    assert json.loads(pao("trust", "--remove", str(folder), "--json")[1]) == {"action": "untrust", "folder": str(folder)}
    assert json.loads(stored.read_text()) == {"folders": []}
    code, _, err = pao("trust", "--remove", str(folder))
    assert code != 0 and "is not among the folders you trusted" in _one_line(err)
    code, _, err = pao("trust", "--remove", str(other))
    assert code != 0 and "remove it there" in _one_line(err)
    code, _, err = pao("trust")
    assert code != 0 and "give a folder" in _one_line(err)


def test_trust_refuses_what_pao_never_trusts(pao: Pao, tmp_path: Path) -> None:
    open_to_all = pao.folder("shared")
    open_to_all.chmod(0o777)
    inside = pao.folder("shared/project")
    sticky = pao.folder("sticky")
    sticky.chmod(0o1777)
    mine_in_sticky = pao.folder("sticky/project")
    cases = {
        "/": "it is the whole file system",
        os.environ["HOME"]: "it is your home folder or holds it",
        str(Path(os.environ["HOME"]).parent): "it is your home folder or holds it",
        str(open_to_all): "anyone may write to it",
        str(inside): f"it is inside {open_to_all}, which anyone may write to",
        str(sticky): "anyone may write to it",
        str(tmp_path / "missing"): "it cannot be read",
    }
    for folder, reason in cases.items():
        code, _, err = pao("trust", folder)
        line = _one_line(err)
        assert code != 0 and line.startswith("pao: pao will not trust") and reason in line, (folder, line)
    assert not (pao.home / "trusted-folders.json").exists()
    assert pao("trust", str(mine_in_sticky))[0] == 0, "a folder of mine in a sticky shared folder is mine"
    # and spawn never pre-trusts them either, not even when asked through the config file
    _config(pao, f'[trust]\nfolders = ["{open_to_all}"]\n')
    code, _, err = pao("spawn", "look", "--folder", str(inside), "--no-nudge")
    assert code != 0 and f"pao never pre-trusts {inside}" in _one_line(err) and pao.plugin.host.preseeded == []


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a folder to another user")
def test_trust_refuses_another_users_folder(pao: Pao) -> None:
    theirs = pao.folder("theirs")
    os.chown(theirs, 65534, 65534)
    code, _, err = pao("trust", str(theirs))
    assert code != 0 and "belongs to another user (uid 65534)" in _one_line(err)


def test_a_bad_trust_table_is_one_line(pao: Pao) -> None:
    _config(pao, "[trust]\nfolder = []\n")
    code, _, err = pao("trust", "--list")
    assert code != 0 and "trust: unknown key 'folder'" in _one_line(err)


def test_one_folder_written_as_a_string_is_refused_not_read_letter_by_letter(pao: Pao) -> None:
    """``folders = "~/code"`` once trusted ``./c`` and ``./o`` (its letters, as relative folders)."""
    pao.folder("c"), pao.folder("o")
    _config(pao, '[trust]\nfolders = "~/code"\n')
    code, out, err = pao("trust", "--list")
    assert code == 2 and out == "" and "trust.folders: must be a list ([...]), not '~/code'" in _one_line(err)
    code, _, err = pao("spawn", "look around", "--folder", str(pao.folder("c")))
    assert code == 2 and "trust.folders: must be a list" in _one_line(err) and pao.plugin.host.preseeded == []


# -- spawn: refuse, trust, inert settings, let the CLI ask, kill --clean ---------------------------


def test_a_folder_whose_settings_run_a_hook_is_refused_before_anything_starts(pao: Pao) -> None:
    folder = _hostile(pao.folder("cloned"))
    code, out, err = pao("spawn", "look around", "--folder", str(folder))
    line = _one_line(err)
    assert code != 0 and out == ""
    assert "hooks.SessionStart runs 'touch /tmp/pwned-by-the-repo'" in line and ".claude/settings.json" in line
    assert f"pao trust {folder.resolve()}" in line and "--let-cli-ask" in line
    assert pao.tmux("list-windows", "-a").returncode != 0, "a tmux server (a window) was started"
    assert pao.plugin.host.preseeded == [] and pao("list", "--json")[1].count('"name"') == 0
    assert sorted(p.name for p in folder.iterdir()) == [".claude"], "pao wrote into the refused folder"

    assert pao("trust", str(folder))[0] == 0
    code, out, err = pao("spawn", "look around", "--folder", str(folder), "--no-nudge", "--json")
    assert code == 0, err
    record = json.loads(out)
    assert record["state"] == "ready" and pao.plugin.host.preseeded == [str(folder.resolve())]
    assert record["extra"]["trust"] == {"preseeded": True, "why": f"you trusted {folder.resolve()}",
                                        "added": {"folder": str(folder.resolve())}}


def test_a_subfolder_of_a_trusted_folder_is_trusted_and_inert_settings_need_no_trust(pao: Pao) -> None:
    parent = pao.folder("code")
    assert pao("trust", str(parent))[0] == 0
    child = _hostile(pao.folder("code/api"))
    assert pao("spawn", "look", "--folder", str(child), "--no-nudge")[0] == 0
    inert = pao.folder("plain")
    (inert / ".claude").mkdir()
    (inert / ".claude" / "settings.json").write_text(json.dumps({"model": "sonnet", "permissions": {"deny": ["Bash"]}}))
    code, out, err = pao("spawn", "look", "--folder", str(inert), "--no-nudge", "--json")
    assert code == 0, err
    assert json.loads(out)["extra"]["trust"]["why"] == "its project settings run nothing"
    assert pao.plugin.host.preseeded == [str(child.resolve()), str(inert.resolve())]


class StateRecorder:
    def __init__(self) -> None:
        self.changes: list[tuple[str, str, str]] = []

    @hookimpl
    def pao_agent_state_changed(self, record, old_state: str, new_state: str, source: str) -> None:
        self.changes.append((record.name, old_state, new_state))


@pytest.mark.parametrize("how", ["option", "config"])
def test_let_cli_ask_leaves_the_dialog_to_the_user_and_says_so(pao: Pao, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    from pao_core.plugins import get_plugins

    folder = _hostile(pao.folder("cloned"))
    monkeypatch.setenv("FAKE_AGENT_DIALOG", "1")  # the CLI's own trust dialog, since pao pre-seeded nothing
    if how == "config":
        _config(pao, "[trust]\nlet_cli_ask = true\n")
    recorder = StateRecorder()
    get_plugins().manager.register(recorder, name="state-recorder")
    try:
        code, out, err = pao("spawn", "look around", "--folder", str(folder), "--json",
                             *(["--let-cli-ask"] if how == "option" else []))
    finally:
        get_plugins().manager.unregister(recorder)
    assert code == 0, err
    record = json.loads(out)
    assert record["state"] == "waiting" and pao.plugin.host.preseeded == []
    assert "trust" in record["extra"]["waiting_for"] and "hooks.SessionStart" in record["extra"]["waiting_for"]
    assert f"pao attach {record['name']}" in record["extra"]["waiting_for"]
    assert record["extra"]["trust"]["preseeded"] is False
    assert ("look-around", "starting", "waiting") in recorder.changes, "no state change for the notifier"
    listed = next(line for line in pao("list")[1].splitlines() if line.startswith("look-around"))
    assert "waiting (" in listed and "trust the folder" in listed, listed  # what it waits for, not just that it does


def test_kill_clean_removes_only_what_pao_added_and_only_when_no_other_agent_needs_it(pao: Pao) -> None:
    folder = pao.folder("svc")
    for name in ("one", "two"):
        assert pao("spawn", "wait", "--folder", str(folder), "--name", name, "--no-nudge")[0] == 0
    assert pao("kill", "one", "--clean")[0] == 0
    assert pao.plugin.host.unseeded == [], "another agent of the host still runs in the folder"
    assert pao("kill", "two", "--clean")[0] == 0
    assert pao.plugin.host.unseeded == [str(folder.resolve())]
    assert pao("spawn", "wait", "--folder", str(folder), "--name", "three", "--no-nudge")[0] == 0
    assert pao("kill", "three")[0] == 0 and pao.plugin.host.unseeded == [str(folder.resolve())], "kill without --clean"


def test_a_spawn_that_fails_after_the_preseed_takes_its_trust_entries_back(pao: Pao, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = pao.folder("svc")
    monkeypatch.setenv("FAKE_AGENT_EXIT", "no such model")
    code, _, err = pao("spawn", "wait", "--folder", str(folder), "--no-nudge")
    assert code != 0 and "no such model" in err
    assert pao.plugin.host.preseeded == [str(folder.resolve())] and pao.plugin.host.unseeded == [str(folder.resolve())]
