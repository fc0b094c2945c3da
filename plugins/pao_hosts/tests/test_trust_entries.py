"""Each host's pre-seed reports the trust entries it added, and ``unseed`` removes exactly those (real files)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from pao_hosts.claude_code import ClaudeCode
from pao_hosts.codex import CodexHost
from pao_hosts.gemini import GeminiHost


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    user = tmp_path / "user"
    user.mkdir()
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.setenv("PAO_HOME", str(tmp_path / "pao"))
    for name in ("CODEX_HOME", "GEMINI_CLI_HOME", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    return user


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


def test_claude_unseed_removes_pao_keys_and_keeps_the_clis_and_the_users(home: Path, folder: Path) -> None:
    config = home / ".claude.json"
    config.write_text(json.dumps({"numStartups": 3, "projects": {"/mine": {"hasTrustDialogAccepted": True}}}))
    host = ClaudeCode(home=home)
    added = host.preseed(str(folder))
    assert added == {"file": str(config), "folder": str(folder), "keys": ["hasTrustDialogAccepted", "allowedTools"]}
    data = json.loads(config.read_text())
    data["projects"][str(folder)]["lastSessionId"] = "abc"  # what the CLI writes while it runs
    config.write_text(json.dumps(data))
    host.unseed(str(folder), added)
    after = json.loads(config.read_text())
    assert after == {"numStartups": 3, "projects": {"/mine": {"hasTrustDialogAccepted": True}, str(folder): {"lastSessionId": "abc"}}}
    host.preseed(str(folder))
    host.unseed(str(folder), {**added, "keys": ["hasTrustDialogAccepted", "allowedTools"]})
    assert str(folder) in json.loads(config.read_text())["projects"], "the CLI's key keeps the entry"


def test_claude_a_folder_the_user_trusted_adds_nothing_and_loses_nothing(home: Path, folder: Path) -> None:
    mine = {"hasTrustDialogAccepted": True, "allowedTools": ["Read"]}
    (home / ".claude.json").write_text(json.dumps({"projects": {str(folder): mine}}))
    host = ClaudeCode(home=home)
    assert host.preseed(str(folder)) == {}
    host.unseed(str(folder), {})
    assert json.loads((home / ".claude.json").read_text())["projects"][str(folder)] == mine


def test_claude_an_entry_pao_made_alone_goes_entirely(home: Path, folder: Path) -> None:
    host = ClaudeCode(home=home)
    host.unseed(str(folder), host.preseed(str(folder)))
    assert json.loads((home / ".claude.json").read_text())["projects"] == {}


def test_codex_unseed_removes_only_the_trust_level_pao_added(home: Path, folder: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('# mine\n[projects."/mine"]\ntrust_level = "trusted"\n')
    host = CodexHost()
    added = host.preseed(str(folder))
    assert added == {"file": str(config), "folder": str(folder)}
    host.unseed(str(folder), added)
    data = tomllib.loads(config.read_text())
    assert data["projects"] == {"/mine": {"trust_level": "trusted"}} and config.read_text().startswith("# mine\n")
    config.write_text(config.read_text() + f'[projects."{folder}"]\ntrust_level = "untrusted"\n')
    assert host.preseed(str(folder)) == {}, "the user's own choice is not pao's to change"
    assert tomllib.loads(config.read_text())["projects"][str(folder)] == {"trust_level": "untrusted"}


def test_gemini_unseed_removes_only_the_entry_pao_added(home: Path, folder: Path) -> None:
    trusted = home / ".gemini" / "trustedFolders.json"
    host = GeminiHost()
    added = host.preseed(str(folder))
    assert added == {"file": str(trusted), "folder": str(folder)}
    data = json.loads(trusted.read_text())
    trusted.write_text(json.dumps({**data, "/mine": "TRUST_PARENT"}))
    host.unseed(str(folder), added)
    assert json.loads(trusted.read_text()) == {"/mine": "TRUST_PARENT"}
    trusted.write_text(json.dumps({str(folder): "DO_NOT_TRUST"}))
    assert host.preseed(str(folder)) == {}
    host.unseed(str(folder), added)
    assert json.loads(trusted.read_text()) == {str(folder): "DO_NOT_TRUST"}
