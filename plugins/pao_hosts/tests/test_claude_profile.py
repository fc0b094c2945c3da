"""The Claude Code host profile: command line, context import, nudge, transcripts, plugin registration."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pao_core.plugins import load_config
from pao_agents.spec import HostAgent, ReadinessDetector
from pao_core.errors import ConfigError, PaoError
from pao_hosts.claude_code import KNOWN_VERSIONS, ClaudeCode, ClaudeCodeOptions, path_key, profile
from pao_agents.spec import AgentRecord, SpawnRequest

REQUEST = SpawnRequest(topic="fix the  login\tbug", folder="/tmp/x", name="x", host="claude-code")


def config_with(tmp_path: Path, **env: str):
    return load_config({"PAO_HOME": str(tmp_path / "pao"), "PAO_CONFIG": str(write_config(tmp_path)), **env})


def write_config(tmp_path: Path, text: str = "") -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_profile_follows_the_contract(tmp_path: Path) -> None:
    claude = profile(config_with(tmp_path))
    assert isinstance(claude, HostAgent) and isinstance(claude.detector(), ReadinessDetector)
    assert (claude.name, claude.context_file, claude.submit_key) == ("claude-code", "CLAUDE.md", "Enter")


def test_command_from_pao_claude_command_is_split_without_a_shell(tmp_path: Path) -> None:
    claude = profile(config_with(tmp_path, PAO_CLAUDE_COMMAND="'/opt/my tools/claude' --model opus"))
    assert claude.command(REQUEST) == ["/opt/my tools/claude", "--model", "opus", "--permission-mode", "default"]


def test_permission_mode_and_extra_args_from_the_config_file(tmp_path: Path) -> None:
    write_config(tmp_path, '[hosts.claude-code]\ncommand = "claude"\npermission_mode = "acceptEdits"\nargs = ["--verbose"]\n')
    claude = profile(load_config({"PAO_HOME": str(tmp_path), "PAO_CONFIG": str(tmp_path / "config.toml")}))
    assert claude.command(REQUEST) == ["claude", "--permission-mode", "acceptEdits", "--verbose"]
    assert claude.detector().footer == ""


def test_bad_options_name_the_key(tmp_path: Path) -> None:
    write_config(tmp_path, '[hosts.claude-code]\npermission_mode = "yolo"\n')
    with pytest.raises(ConfigError, match="hosts.claude-code"):
        profile(load_config({"PAO_HOME": str(tmp_path), "PAO_CONFIG": str(tmp_path / "config.toml")}))
    with pytest.raises(ConfigError, match="cannot parse"):
        ClaudeCode(ClaudeCodeOptions(command="'unclosed")).command(REQUEST)


def test_claude_from_path_or_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin" / "claude"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho '2.1.332 (Claude Code)'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(fake.parent))
    claude = ClaudeCode()
    assert claude.command(REQUEST)[0] == str(fake)
    assert claude.version() == "2.1.332" and "2.1.332" in claude.known_versions() == KNOWN_VERSIONS
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(PaoError, match="no `claude` on PATH"):
        claude.command(REQUEST)
    assert claude.version() is None


def test_context_block_and_nudge() -> None:
    claude = ClaudeCode()
    assert claude.context_block("CONTEXT_BRIEFING.md", "# anything") == "@CONTEXT_BRIEFING.md\n"
    nudge = claude.nudge(REQUEST, "CONTEXT_BRIEFING.md")
    assert "fix the login bug" in nudge and "CONTEXT_BRIEFING.md" in nudge and "\n" not in nudge


def test_path_key_replaces_every_non_alphanumeric_character() -> None:
    assert path_key("/home/me/code/my_app.v2") == "-home-me-code-my-app-v2"


def _transcript(projects: Path, folder: str, name: str, mtime: float) -> None:
    path = projects / path_key(folder) / f"{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}\n")
    os.utime(path, (mtime, mtime))


def test_session_id_is_the_newest_transcript_since_the_agent_started(tmp_path: Path) -> None:
    claude = ClaudeCode(home=tmp_path)
    projects = tmp_path / ".claude" / "projects"
    started = dt.datetime.now(dt.timezone.utc) - dt.timedelta(minutes=5)
    record = AgentRecord(name="x", folder="/w/app", topic="t", host="claude-code", terminal="tmux", target="t", created_at=started)
    assert claude.session_id(record) is None
    base = started.timestamp()
    _transcript(projects, "/w/app", "11111111-1111-4111-8111-111111111111", base - 600)  # an older session
    assert claude.session_id(record) is None
    _transcript(projects, "/w/app", "22222222-2222-4222-8222-222222222222", base + 10)
    _transcript(projects, "/w/app", "33333333-3333-4333-8333-333333333333", base + 20)
    _transcript(projects, "/w/app", "not-a-session", base + 30)
    _transcript(projects, "/w/other", "44444444-4444-4444-8444-444444444444", base + 40)
    assert claude.session_id(record) == "33333333-3333-4333-8333-333333333333"
    command = ClaudeCode(ClaudeCodeOptions(command="claude"), home=tmp_path).resume_command(record)
    assert command == ["claude", "--resume", "33333333-3333-4333-8333-333333333333", "--permission-mode", "default"]
    known = AgentRecord(name="x", folder="/nowhere", topic="t", host="claude-code", terminal="tmux", target="t", session_id="abc")
    assert ClaudeCode(ClaudeCodeOptions(command="claude"), home=tmp_path).resume_command(known)[1:3] == ["--resume", "abc"]
    unknown = AgentRecord(name="x", folder="/nowhere", topic="t", host="claude-code", terminal="tmux", target="t")
    assert ClaudeCode(ClaudeCodeOptions(command="claude"), home=tmp_path).resume_command(unknown)[1] == "--continue"


def test_pao_plugins_lists_the_claude_code_plugin(tmp_path: Path) -> None:
    env = {**os.environ, "PAO_HOME": str(tmp_path / "pao"), "PAO_CONFIG": str(write_config(tmp_path))}
    pao = str(Path(sys.executable).parent / "pao")
    result = subprocess.run([pao, "plugins", "--json"], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)["plugins"]}
    assert set(rows["claude-code"]["hooks"]) == {"pao_config_tables", "pao_host_agents", "pao_readiness_detectors"}
    assert rows["claude-code"]["distribution"] == "pao-hosts"


def test_importing_pao_core_stays_light() -> None:
    code = "import sys, pao_core, pao_hosts.claude_code; print(sorted(m for m in sys.modules if m.split('.')[0] in {'libtmux','psycopg','sqlalchemy','requests','pytest'}))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"


def _hooked_events(tmp_path: Path, command: Path) -> set[str]:
    host = ClaudeCode(ClaudeCodeOptions(command=str(command)))
    request = SpawnRequest(topic="t", folder=str(tmp_path), name="a", host="claude-code", agent_dir=str(tmp_path / "agent"))
    hooks = set(json.loads(host.session_files(request)["claude-settings.json"])["hooks"])
    assert {"PreToolUse", "PermissionRequest", "Stop", "Notification"} <= hooks
    return hooks


@pytest.mark.parametrize(("version", "with_failure"), [("2.0.77", False), ("2.1.77", False), ("2.1.78", True),
                                                       ("2.1.100", True), ("2.1.332", True), ("2.2.0", True),
                                                       ("2.1.400-beta.1", True)])
def test_stop_failure_is_hooked_only_where_the_installed_package_knows_it(tmp_path: Path, version: str,
                                                                          with_failure: bool) -> None:
    """2.0.77 refuses a settings file naming StopFailure (every hook of it is lost): measured with the pinned CLI;
    2.1.78 is the first package whose CLI names it. Held-out versions between the pins have it too."""
    package = tmp_path / "node_modules" / "@anthropic-ai" / "claude-code"
    package.mkdir(parents=True)
    (package / "package.json").write_text(json.dumps({"name": "@anthropic-ai/claude-code", "version": version}))
    (package / "cli.js").write_text("")
    assert ("StopFailure" in _hooked_events(tmp_path, package / "cli.js")) is with_failure


def _script(path: Path, prints: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho '{prints}'\n")
    path.chmod(0o755)
    return path


def test_a_native_install_or_a_wrapper_is_versioned_by_its_path_or_its_version_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    native = _script(tmp_path / "share" / "claude" / "versions" / "2.1.300", "not a version")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "claude").symlink_to(native)  # the native installer's ~/.local/bin/claude
    assert "StopFailure" in _hooked_events(tmp_path, tmp_path / "bin" / "claude")
    wrapper = _script(tmp_path / "wrap" / "claude", "2.1.310 (Claude Code)")
    assert "StopFailure" in _hooked_events(tmp_path, wrapper)
    assert capsys.readouterr().err == ""


def test_a_version_pao_cannot_read_keeps_every_hook_that_always_works_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    custom = _script(tmp_path / "custom" / "claude", "claude, a custom build")
    assert "StopFailure" not in _hooked_events(tmp_path, custom)
    said = capsys.readouterr().err
    assert said.startswith("pao: cannot tell which Claude Code version") and said.count("\n") == 1
    assert "Traceback" not in said
