"""Trust pre-seeding for Claude Code: the keys it writes, what it keeps, and the locks it honours."""

from __future__ import annotations

import json
import multiprocessing
import os
import threading
import time
from pathlib import Path

import pytest

from pao_core.files import LockTimeout
from pao_agents.spec import UnreadableJSON
from pao_hosts import claude_trust
from pao_hosts.claude_code import ClaudeCode, ClaudeCodeOptions


def read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".claude.json").write_text(
        json.dumps({"numStartups": 7, "userID": "abc", "projects": {"/elsewhere": {"allowedTools": ["Bash"], "x": 1}}})
    )
    return home


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def test_preseed_writes_every_trust_key_and_keeps_the_rest(home: Path, folder: Path) -> None:
    ClaudeCode(ClaudeCodeOptions(permission_mode="bypass"), home=home).preseed(str(folder))  # bypass chosen
    config = read(home / ".claude.json")
    assert config["projects"][str(folder)] == {"hasTrustDialogAccepted": True, "allowedTools": []}
    assert config["bypassPermissionsModeAccepted"] is True
    assert config["numStartups"] == 7 and config["userID"] == "abc"
    assert config["projects"]["/elsewhere"] == {"allowedTools": ["Bash"], "x": 1}
    assert read(home / ".claude" / "settings.json") == {"skipDangerousModePermissionPrompt": True}
    assert "hasCompletedOnboarding" not in config and "customApiKeyResponses" not in config  # the user's consent
    assert json.loads((home / ".claude.json.bak").read_text())["numStartups"] == 7
    assert not (home / ".claude.json.lock").exists()


def test_preseed_keeps_an_existing_project_entry(home: Path, folder: Path) -> None:
    config = read(home / ".claude.json")
    config["projects"][str(folder)] = {"allowedTools": ["Read"], "history": ["x"]}
    (home / ".claude.json").write_text(json.dumps(config))
    ClaudeCode(home=home).preseed(str(folder))
    entry = read(home / ".claude.json")["projects"][str(folder)]
    assert entry == {"allowedTools": ["Read"], "history": ["x"], "hasTrustDialogAccepted": True}


def test_without_bypass_mode_no_bypass_acceptance_is_written(home: Path, folder: Path) -> None:
    ClaudeCode(ClaudeCodeOptions(permission_mode="acceptEdits"), home=home).preseed(str(folder))
    assert "bypassPermissionsModeAccepted" not in read(home / ".claude.json")
    assert not (home / ".claude" / "settings.json").exists()


def test_a_broken_claude_json_is_refused_and_left_alone(home: Path, folder: Path) -> None:
    (home / ".claude.json").write_text('{"numStartups": 7,')
    with pytest.raises(UnreadableJSON, match=r"\.claude\.json is not valid JSON"):
        ClaudeCode(home=home).preseed(str(folder))
    assert (home / ".claude.json").read_text() == '{"numStartups": 7,'


def test_projects_that_is_not_an_object_is_refused(home: Path, folder: Path) -> None:
    (home / ".claude.json").write_text('{"projects": []}')
    with pytest.raises(UnreadableJSON, match="'projects' is not an object"):
        claude_trust.trust_folder(str(folder), home=home)


def test_waits_for_claude_codes_own_lock(home: Path, folder: Path) -> None:
    lock = home / ".claude.json.lock"
    lock.mkdir()  # what proper-lockfile does while a running claude writes the file
    released = []

    def release() -> None:
        time.sleep(0.4)
        released.append(time.monotonic())
        lock.rmdir()

    threading.Thread(target=release).start()
    claude_trust.trust_folder(str(folder), home=home)
    assert released, "pao wrote while Claude Code held its lock"
    assert read(home / ".claude.json")["projects"][str(folder)]["hasTrustDialogAccepted"] is True
    assert not lock.exists()


def test_a_live_claude_lock_times_out_with_a_clear_error(home: Path, folder: Path) -> None:
    (home / ".claude.json.lock").mkdir()
    with pytest.raises(LockTimeout, match="held by a running Claude Code"):
        claude_trust.trust_folder(str(folder), home=home, timeout=0.3)
    assert str(folder) not in read(home / ".claude.json")["projects"]


def test_a_stale_claude_lock_is_taken_over(home: Path, folder: Path) -> None:
    lock = home / ".claude.json.lock"
    lock.mkdir()
    old = time.time() - 30
    os.utime(lock, (old, old))
    claude_trust.trust_folder(str(folder), home=home, timeout=1.0)
    assert read(home / ".claude.json")["projects"][str(folder)]["hasTrustDialogAccepted"] is True
    assert not lock.exists()


def _trust_in_process(home: str, folder: str) -> None:
    claude_trust.trust_folder(folder, home=Path(home))


def test_five_concurrent_preseeds_keep_every_entry(home: Path, tmp_path: Path) -> None:
    folders = [str(tmp_path / f"agent-{n}") for n in range(5)]
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_trust_in_process, args=(str(home), f)) for f in folders]
    for process in processes:
        process.start()
    for process in processes:
        process.join(30)
        assert process.exitcode == 0
    config = read(home / ".claude.json")
    assert all(config["projects"][f]["hasTrustDialogAccepted"] for f in folders)
    assert config["numStartups"] == 7 and config["projects"]["/elsewhere"]["x"] == 1


def test_mcp_servers_of_the_folder_are_approved(home: Path, folder: Path) -> None:
    (folder / ".mcp.json").write_text(json.dumps({"mcpServers": {"notes": {}, "memory": {}, "blocked": {}}}))
    (folder / ".claude").mkdir()
    (folder / ".claude" / "settings.local.json").write_text(
        json.dumps({"permissions": {"allow": ["Bash(ls)"]}, "disabledMcpjsonServers": ["blocked"]})
    )
    ClaudeCode(ClaudeCodeOptions(mcp_approval="folder"), home=home).preseed(str(folder))  # the user chose it
    local = read(folder / ".claude" / "settings.local.json")
    assert local["enabledMcpjsonServers"] == ["memory", "notes"]  # the user's "no" stays a no
    assert local["permissions"] == {"allow": ["Bash(ls)"]}


def test_mcp_approval_all_and_none(home: Path, folder: Path, tmp_path: Path) -> None:
    (folder / ".mcp.json").write_text(json.dumps({"mcpServers": {"notes": {}}}))
    ClaudeCode(ClaudeCodeOptions(mcp_approval="all"), home=home).preseed(str(folder))
    assert read(folder / ".claude" / "settings.local.json") == {"enableAllProjectMcpServers": True}
    other = tmp_path / "other"
    other.mkdir()
    (other / ".mcp.json").write_text(json.dumps({"mcpServers": {"notes": {}}}))
    ClaudeCode(ClaudeCodeOptions(mcp_approval="none"), home=home).preseed(str(other))
    assert not (other / ".claude").exists()


def test_no_mcp_file_writes_no_local_settings(home: Path, folder: Path) -> None:
    ClaudeCode(home=home).preseed(str(folder))
    assert not (folder / ".claude").exists()


def test_a_broken_mcp_file_is_reported(home: Path, folder: Path) -> None:
    (folder / ".mcp.json").write_text("{nope")
    ClaudeCode(home=home).preseed(str(folder))  # the default approves nothing, so reads nothing
    with pytest.raises(UnreadableJSON, match=r"\.mcp\.json is not valid JSON"):
        ClaudeCode(ClaudeCodeOptions(mcp_approval="folder"), home=home).preseed(str(folder))


def test_consent_gaps_are_explained_not_filled(home: Path) -> None:
    key = "sk-ant-api03-some-users-key-abcdefghijklmnopqrst"
    gaps = ClaudeCode(home=home).consent_gaps({"ANTHROPIC_API_KEY": key})
    assert len(gaps) == 2 and "first-run" in gaps[0] and "Do you want to use this API key?" in gaps[1]
    config = read(home / ".claude.json")
    config.update({"hasCompletedOnboarding": True, "customApiKeyResponses": {"approved": [key[-20:]]}})
    (home / ".claude.json").write_text(json.dumps(config))
    assert ClaudeCode(home=home).consent_gaps({"ANTHROPIC_API_KEY": key}) == []
    assert ClaudeCode(home=home).consent_gaps({}) == []


def test_claude_config_dir_moves_every_file(tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cfg"))
    (tmp_path / "cfg").mkdir()
    ClaudeCode(ClaudeCodeOptions(permission_mode="bypass")).preseed(str(folder))
    assert read(tmp_path / "cfg" / ".claude.json")["projects"][str(folder)]["hasTrustDialogAccepted"] is True
    assert read(tmp_path / "cfg" / "settings.json") == {"skipDangerousModePermissionPrompt": True}
    assert ClaudeCode().projects_dir() == tmp_path / "cfg" / "projects"


def test_a_legacy_config_file_is_the_one_edited(home: Path, folder: Path) -> None:
    (home / ".claude").mkdir()
    (home / ".claude" / ".config.json").write_text('{"legacy": true}')
    claude_trust.trust_folder(str(folder), home=home)
    assert read(home / ".claude" / ".config.json")["projects"][str(folder)]["hasTrustDialogAccepted"] is True
    assert str(folder) not in read(home / ".claude.json")["projects"]


def test_a_symlinked_claude_json_stays_a_symlink(home: Path, folder: Path, tmp_path: Path) -> None:
    """Dotfile managers link ~/.claude.json; the pre-seed edits the file it points to."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "claude.json"
    os.replace(home / ".claude.json", real)
    (home / ".claude.json").symlink_to(real)
    claude_trust.trust_folder(str(folder), home=home)
    assert (home / ".claude.json").is_symlink() and os.readlink(home / ".claude.json") == str(real)
    data = read(real)
    assert data["projects"][str(folder)]["hasTrustDialogAccepted"] is True and data["numStartups"] == 7
    assert (dotfiles / "claude.json.bak").exists() and not (home / ".claude.json.bak").exists()


def test_the_lock_of_a_symlinked_claude_json_is_beside_the_link(home: Path, folder: Path, tmp_path: Path) -> None:
    """2.0.77 locks ``lockfilePath: file + ".lock"`` with the unresolved path, and writes through the link."""
    real = tmp_path / "claude.json"
    os.replace(home / ".claude.json", real)
    (home / ".claude.json").symlink_to(real)
    (home / ".claude.json.lock").mkdir()
    with pytest.raises(LockTimeout, match="held by a running Claude Code"):
        claude_trust.trust_folder(str(folder), home=home, timeout=0.3)
    assert str(folder) not in read(real)["projects"]
