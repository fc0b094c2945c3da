"""A hostile folder and another local user: file modes, links in the folder, the agent's
environment, and broken state that must fail in one line (issue 15, findings 4-6 and 8)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from pao_core.cli import main
from pao_core.plugins import load_config
from pao_agents.delivery import DeliveryError, deliver
from pao_core.files import SymlinkRefused, atomic_write
from pao_agents.spec import update_json
from pao_hosts import claude_trust
from pao_agents.lifecycle import agent_environment
from pao_core.models import Briefing


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _briefing() -> Briefing:
    return Briefing(topic="t", markdown="# Context briefing\n", items=(), backends={}, elapsed_ms=0.0, folders=(),
                    content_hash="0" * 64, generated_at=None)


# -- 4. file modes ---------------------------------------------------------------------


def test_memory_and_state_files_are_the_owners_alone(isolated_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = Path(os.environ["PAO_HOME"])
    home.chmod(0o755)  # as an older pao left it
    assert main(["memory", "add", "rostra", "the replica moved to db2"]) == 0
    from pao_historyworker.index import connect

    connect(home / "history.sqlite3", create=True).close()
    store = home / "longterm.sqlite3"
    assert mode(home) == 0o700
    assert mode(store) == 0o600 and mode(home / "history.sqlite3") == 0o600
    for sidecar in home.glob("*.sqlite3-*"):
        assert mode(sidecar) & 0o077 == 0, sidecar
    from pao_core.files import private_dir

    atomic_write(private_dir(home / "failed") / "a.screen.txt", "screen")  # as a failed spawn saves its screen
    assert mode(home / "failed") == 0o700
    assert mode(home / "failed" / "a.screen.txt") == 0o600


def test_a_backup_is_never_wider_than_its_original(isolated_home: Path) -> None:
    home = isolated_home / "user"
    config = home / ".claude.json"
    claude_trust.trust_folder(str(isolated_home), home=home, bypass=False)
    assert mode(config) == 0o600, "a new ~/.claude.json is the owner's alone"
    (home / ".claude.json.bak").write_text("{}")
    (home / ".claude.json.bak").chmod(0o644)  # left by an older pao
    claude_trust.trust_folder(str(isolated_home / "other"), home=home, bypass=False)
    assert mode(home / ".claude.json.bak") == 0o600
    assert json.loads((home / ".claude.json.bak").read_text())["projects"]


# -- 5. links inside the folder ----------------------------------------------------------


def test_delivery_refuses_a_linked_git_exclude(isolated_home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    exclude = folder / ".git" / "info" / "exclude"
    exclude.unlink(missing_ok=True)
    exclude.parent.mkdir(parents=True, exist_ok=True)
    exclude.symlink_to(victim)
    with pytest.raises(DeliveryError, match="symbolic link; pao will not write exclude through it"):
        deliver(_briefing(), folder, config=load_config(), context_file="CLAUDE.md", context_block="@CONTEXT_BRIEFING.md")
    assert victim.read_text() == "precious\n"
    assert not (folder / "CONTEXT_BRIEFING.md").exists() and not (folder / "CLAUDE.md").exists()


@pytest.mark.parametrize("linked", ["file", "folder"])
def test_mcp_approval_refuses_a_linked_settings_file(tmp_path: Path, linked: str) -> None:
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / ".mcp.json").write_text(json.dumps({"mcpServers": {"evil": {"command": "true"}}}))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    victim = elsewhere / "settings.local.json"
    victim.write_text("{}")
    if linked == "file":
        (folder / ".claude").mkdir()
        (folder / ".claude" / "settings.local.json").symlink_to(victim)
    else:
        (folder / ".claude").symlink_to(elsewhere)
    with pytest.raises(SymlinkRefused, match="symbolic link"):
        claude_trust.approve_mcp_servers(str(folder), "folder")
    assert victim.read_text() == "{}"


def test_update_json_follows_links_only_where_asked(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("{}")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    update_json(link, lambda data: data.__setitem__("a", 1))  # ~/.claude.json managed by a dotfile tool
    assert json.loads(real.read_text()) == {"a": 1} and link.is_symlink()
    with pytest.raises(SymlinkRefused):
        update_json(link, lambda data: data.__setitem__("b", 2), no_symlink=True)


# -- 6. the agent's environment ------------------------------------------------------------


def test_the_agent_environment_carries_no_pao_credential() -> None:
    base = {
        "PATH": "/usr/bin", "HOME": "/home/sam", "ANTHROPIC_API_KEY": "the user's own",
        "PAO_POSTGRES_URL": "postgresql://sam:hunter2@db/memory", "PAO_HISTORY_TOKEN": "t0ken",
        "PAO_HISTORY_URL": "http://u:p@127.0.0.1:1/rpc", "PAO_SOME_SECRET": "x", "PAO_API_KEY": "y",
        "PAO_HOME": "/home/sam/.pao",
    }
    env = agent_environment(base, {"CI": None, "PAO_MARK": "1"})
    assert not [key for key in env if key in base and key.startswith("PAO_") and key != "PAO_HOME"]
    assert env["ANTHROPIC_API_KEY"] == "the user's own" and env["PAO_HOME"] == "/home/sam/.pao" and env["PAO_MARK"] == "1"


# -- 8. broken state fails in one line ---------------------------------------------------------


def _one_line(capsys: pytest.CaptureFixture[str], *args: str, secret: str = "") -> str:
    code = main(list(args))
    err = capsys.readouterr().err.strip()
    assert code != 0 and len(err.splitlines()) == 1 and err.startswith("pao: "), (args, code, err)
    assert not secret or secret not in err
    return err


def test_bad_state_is_one_line(isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    not_a_folder = tmp_path / "home-is-a-file"
    not_a_folder.write_text("")
    monkeypatch.setenv("PAO_HOME", str(not_a_folder))
    for command in (["list"], ["spawn", "fix it", "--folder", str(tmp_path)], ["list", "--json"]):
        assert "Not a directory" in _one_line(capsys, *command)
    broken = tmp_path / "broken-home"
    (broken / "history.sqlite3").mkdir(parents=True)
    monkeypatch.setenv("PAO_HOME", str(broken))
    assert "cannot open the history index" in _one_line(capsys, "history", "stats")
    monkeypatch.setenv("PAO_POSTGRES_URL", "sam:hunter2@localhost/memory")
    assert "not a PostgreSQL URL" in _one_line(capsys, "memory", "stats", secret="hunter2")


def test_one_unreadable_record_hides_no_other_agent(isolated_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = Path(os.environ["PAO_HOME"])
    good = {"name": "good", "folder": "/tmp", "topic": "t", "host": "claude-code", "terminal": "tmux", "target": "pao-test-nosuchserver:%1",
            "created_at": "2026-01-01T00:00:00+00:00"}
    (home / "agents.json").write_text(json.dumps({"version": 1, "agents": {"good": good, "bad": {"name": 5}}}))
    assert main(["list"]) == 0
    out, err = capsys.readouterr()
    assert "good" in out and "agent 'bad' has an unreadable record" in err


def test_doctor_agrees_with_itself_on_a_corrupt_store(isolated_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = Path(os.environ["PAO_HOME"])
    (home / "longterm.sqlite3").write_text("not a database, whatever its name says")
    main(["doctor", "--json"])
    checks = json.loads(capsys.readouterr().out)["checks"]
    about = [check for check in checks if check["area"] in ("store", "backend") and check["name"].startswith("longterm")]
    assert about and {check["status"] for check in about} == {"fail"}, about
