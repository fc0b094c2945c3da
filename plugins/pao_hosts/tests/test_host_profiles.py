"""The Codex and Gemini CLI profiles: command lines, briefing blocks, pre-seeding, sessions."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import attrs
import pytest

from pao_agents.spec import host_agents
from pao_core.plugins import load_config
from pao_hosts.codex import CodexHost
from pao_hosts.common import HostOptions
from pao_hosts.gemini import GeminiHost
from pao_agents.spec import agent_environment
from pao_core.models import Briefing
from pao_agents.spec import AgentRecord, SpawnRequest
from pao_core.plugins import build_plugins
from pao_hosts.tomlfile import UnreadableTOML
from pao_core.errors import ConfigError, PaoError
from pao_agents.spec import UnreadableJSON
from pao_testing.host_cases import CASES
from pao_testing.hostrun import fail_unless_loopback_only

CODEX, GEMINI = CodexHost(HostOptions("/opt/codex")), GeminiHost(HostOptions("/opt/gemini"))

NOW = dt.datetime.now(dt.timezone.utc)


def _host(name: str):
    return next(h for h in host_agents(build_plugins(), load_config()) if h.name == name)


def _request(folder: Path, host: str) -> SpawnRequest:
    return SpawnRequest(topic="fix  the\tparser", folder=str(folder), name="parser", host=host)


def _record(folder: Path, host: str, **changes) -> AgentRecord:
    return AgentRecord(name="parser", folder=str(folder), topic="t", host=host, terminal="tmux", target="x", **changes)


@pytest.mark.hook("pao_host_agents")
def test_both_hosts_are_plugins_of_pao_hosts(pao) -> None:
    listing = json.loads(pao("plugins", "--json").stdout)
    rows = {row["name"]: row for row in listing["plugins"]}
    for name in ("codex", "gemini"):
        assert rows[name]["distribution"] == "pao-hosts"
        assert {"pao_host_agents", "pao_readiness_detectors"} <= set(rows[name]["hooks"])


@pytest.mark.parametrize("host", ["codex", "gemini"])
def test_a_configured_command_is_split_like_a_shell_would(host: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(f"PAO_{host.upper()}_COMMAND", f"'/opt/my tools/{host}' --profile work")
    assert _host(host).command(_request(tmp_path, host))[:3] == [f"/opt/my tools/{host}", "--profile", "work"]
    monkeypatch.setenv(f"PAO_{host.upper()}_COMMAND", f"'/opt/{host}")
    with pytest.raises(ConfigError, match=f"hosts.{host}.command: cannot parse"):
        _host(host).command(_request(tmp_path, host))


def test_command_lines_ask_by_default_and_bypass_only_when_chosen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pao_hosts.codex import CodexHost, CodexOptions
    from pao_hosts.gemini import GeminiHost, GeminiOptions

    monkeypatch.setenv("PAO_CODEX_COMMAND", "/opt/codex/bin/codex")
    monkeypatch.setenv("PAO_GEMINI_COMMAND", "/opt/gemini")
    codex, gemini = _host("codex"), _host("gemini")
    assert codex.permission_mode() == gemini.permission_mode() == "default"
    assert codex.command(_request(tmp_path, "codex")) == [
        "/opt/codex/bin/codex", "--no-daemon", "--ask-for-approval", "on-request"]
    request = attrs.evolve(_request(tmp_path, "gemini"), session_id="0f0e0d0c-0b0a-4909-8807-060504030201")
    first, second = gemini.command(request), gemini.command(request)
    assert first == ["/opt/gemini", "--session-id", request.session_id]
    assert first == second, "the command is pure: the session id is pao's choice, made once per spawn"
    assert gemini.command(_request(tmp_path, "gemini")) == ["/opt/gemini"]
    bypass_codex = CodexHost(CodexOptions(command="codex", permission_mode="bypass"), 1000)
    assert bypass_codex.command(_request(tmp_path, "codex")) == [
        "codex", "--no-daemon", "--dangerously-bypass-approvals-and-sandbox"]
    assert GeminiHost(GeminiOptions(command="gemini", permission_mode="bypass")).command(
        _request(tmp_path, "gemini"))[:2] == ["gemini", "--yolo"]


def test_codex_session_command_has_hooks_their_trust_and_the_task_but_no_memory_text(tmp_path: Path) -> None:
    from pao_hosts.codex import CodexOptions
    from pao_hosts.session_hooks import SESSION_START, codex_trust_hash

    agent_dir = tmp_path / "agents" / "a"
    agent_dir.mkdir(parents=True)
    (agent_dir / "briefing.md").write_text("SECRET-MEMORY-TEXT with \"quotes\" and \\ and $(x)\n")
    codex = CodexHost(CodexOptions(command="codex"))
    request = attrs.evolve(_request(tmp_path, "codex"), agent_dir=str(agent_dir), prompt="Your task: t.")
    (agent_dir / SESSION_START).write_text(codex.session_files(request)[SESSION_START])
    command = codex.command(request)
    assert command[:4] == ["codex", "--no-daemon", "--ask-for-approval", "on-request"] and command[-1] == "Your task: t."
    assert not any("SECRET-MEMORY-TEXT" in word for word in command), "memory text on the command line"
    overrides = tomllib.loads("\n".join(command[i + 1] for i, word in enumerate(command) if word == "-c"))
    hooks = overrides["hooks"]
    assert set(hooks) - {"state"} == {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PermissionRequest", "Stop"}
    start = hooks["SessionStart"][0]["hooks"][0]
    assert str(agent_dir / "events.jsonl") in start["command"] and SESSION_START in start["command"]
    trusted = hooks["state"]["/<session-flags>/config.toml:session_start:0:0"]["trusted_hash"]
    assert trusted == codex_trust_hash("session_start", start["command"]) and trusted.startswith("sha256:")
    output = json.loads((agent_dir / SESSION_START).read_text())["hookSpecificOutput"]
    assert output == {"hookEventName": "SessionStart", "additionalContext": (agent_dir / "briefing.md").read_text()}
    done = subprocess.run(["sh", "-c", start["command"]], input='{"hook_event_name": "SessionStart"}', capture_output=True,
                          text=True, check=True)
    assert json.loads(done.stdout) == {"hookSpecificOutput": output} and "SessionStart" in (agent_dir / "events.jsonl").read_text()


@pytest.mark.parametrize("host", ["codex", "gemini"])
def test_a_missing_cli_is_one_line_naming_the_fix(host: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(PaoError, match=f"no `{host}` on PATH: install .* or set PAO_{host.upper()}_COMMAND"):
        _host(host).command(_request(tmp_path, host))


def test_config_table_adds_arguments(pao_config_file: Path, tmp_path: Path) -> None:
    pao_config_file.write_text(
        '[hosts.gemini]\ncommand = "/x/gemini"\nargs = ["--model", "flash"]\nenv = {GEMINI_CLI_NO_RELAUNCH = "true"}\n'
    )
    gemini = _host("gemini")
    command = gemini.command(_request(tmp_path, "gemini"))
    assert command[0] == "/x/gemini" and command[-2:] == ["--model", "flash"]
    assert gemini.environment(_request(tmp_path, "gemini"))["GEMINI_CLI_NO_RELAUNCH"] == "true"


@pytest.mark.parametrize("host", ["claude-code", "codex", "gemini"])
def test_ci_markers_are_removed_from_the_agent_environment(host: str, tmp_path: Path) -> None:
    changes = _host(host).environment(_request(tmp_path, host))
    inherited = {"CI": "true", "GITHUB_ACTIONS": "true", "CONTINUOUS_INTEGRATION": "1", "HOME": "/home/u"}
    assert agent_environment(inherited, changes) == {"HOME": "/home/u"}


@pytest.mark.parametrize("host", ["claude-code", "codex", "gemini"])
def test_session_files_without_the_agent_s_folder_are_refused_in_words(host: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"agent 'parser': a host's session files need the agent's private folder"):
        _host(host).session_files(_request(tmp_path, host))


def test_a_ci_marker_set_in_the_host_table_is_kept(pao_config_file: Path, tmp_path: Path) -> None:
    pao_config_file.write_text('[hosts.gemini]\nenv = {CI = "true"}\n')
    changes = _host("gemini").environment(_request(tmp_path, "gemini"))
    assert agent_environment({"GITHUB_ACTIONS": "true"}, changes) == {"CI": "true"}


def test_bad_host_options_name_the_key(pao_config_file: Path) -> None:
    pao_config_file.write_text('[hosts.codex]\nargs = "--oops"\ncolour = 1\n')
    with pytest.raises(ConfigError, match=r"hosts\.codex: unknown key 'colour' \(known keys: command, args, env, permission_mode\)"):
        load_config()  # checked at load time, before any host is asked for


def _deliver(host, folder: Path, markdown: str) -> str:
    """``pao brief --write``'s delivery (``pao_briefing_deliverers``) with ``host`` as the default host."""
    briefing = Briefing(topic="t", markdown=markdown, items=(), backends={}, elapsed_ms=0.0)
    config = load_config()
    config = attrs.evolve(config, tables={**config.tables, "spawn": {"host": host.name}})
    build_plugins().briefing_deliverers(config)[0].deliver(briefing, str(folder))
    return (folder / host.context_file).read_text(encoding="utf-8")


def test_codex_block_carries_the_briefing_once(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("# House rules\nUse tabs.\n")
    markdown = "# Briefing\nMARKER-7 lives here.\n<!-- pao:briefing:end -->\n"
    text = _deliver(_host("codex"), tmp_path, markdown)
    again = _deliver(_host("codex"), tmp_path, markdown)
    assert text == again and text.startswith("# House rules\nUse tabs.\n")
    assert text.count("MARKER-7") == 1 and text.count("<!-- pao:briefing:end -->") == 1


def test_codex_block_is_cut_to_the_budget() -> None:
    block = CodexHost(budget_chars=100).context_block("/w/CONTEXT_BRIEFING.md", "line\n" * 100)
    assert len(block) < 260 and "the rest is in CONTEXT_BRIEFING.md" in block


def test_gemini_block_imports_the_briefing(tmp_path: Path) -> None:
    text = _deliver(_host("gemini"), tmp_path, "# Briefing\nsecret\n")
    assert "@./CONTEXT_BRIEFING.md" in text and "secret" not in text


def test_nudge_is_one_line() -> None:
    nudge = _host("codex").nudge(_request(Path("/w"), "codex"), "/w/CONTEXT_BRIEFING.md")
    assert "\n" not in nudge and "fix the parser" in nudge and "CONTEXT_BRIEFING.md" in nudge


CODEX_CONFIG = """\
# mine
model = "o3"  # keep me
check_for_update_on_startup = true

[projects."/elsewhere"]
trust_level = "untrusted"
"""


def test_codex_preseed_keeps_the_users_file(tmp_path: Path, isolated_home: Path) -> None:
    config = isolated_home / "user" / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(CODEX_CONFIG)
    folder = tmp_path / "work"
    folder.mkdir()
    CodexHost().preseed(str(folder))
    text = config.read_text()
    assert text.startswith(CODEX_CONFIG.split("\n[projects")[0]), "comments and existing keys stay as written"
    data = tomllib.loads(text)
    assert data["check_for_update_on_startup"] is True, "the user's choice wins"
    assert data["analytics"] == {"enabled": False}
    assert data["projects"] == {"/elsewhere": {"trust_level": "untrusted"}, str(folder): {"trust_level": "trusted"}}
    assert (config.parent / "config.toml.bak").read_text() == CODEX_CONFIG
    CodexHost().preseed(str(folder))
    assert config.read_text() == text, "a second pre-seed changes nothing"


def test_codex_preseed_follows_codex_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "ch"))
    CodexHost().preseed(str(tmp_path))
    assert tomllib.loads((tmp_path / "ch" / "config.toml").read_text())["projects"][str(tmp_path)]


def test_codex_preseed_refuses_a_broken_file(tmp_path: Path, isolated_home: Path) -> None:
    config = isolated_home / "user" / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text("model = \n")
    with pytest.raises(UnreadableTOML, match="not valid TOML"):
        CodexHost().preseed(str(tmp_path))
    assert config.read_text() == "model = \n"


def test_concurrent_codex_preseeds_keep_every_folder(tmp_path: Path, isolated_home: Path) -> None:
    folders = [tmp_path / f"f{i}" for i in range(6)]
    code = "import sys; from pao_hosts.codex import CodexHost; CodexHost().preseed(sys.argv[1])"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(f)]) for f in folders]
    assert [p.wait(60) for p in procs] == [0] * len(folders)
    projects = tomllib.loads((isolated_home / "user" / ".codex" / "config.toml").read_text())["projects"]
    assert sorted(projects) == sorted(str(f) for f in folders)


def test_gemini_preseed_keeps_the_users_choices(tmp_path: Path, isolated_home: Path) -> None:
    gemini = isolated_home / "user" / ".gemini"
    gemini.mkdir()
    user = {"security": {"auth": {"selectedType": "oauth-personal"}}, "ui": {"theme": "Dracula"}}
    (gemini / "settings.json").write_text(json.dumps(user))
    (gemini / "trustedFolders.json").write_text(json.dumps({"/elsewhere": "DO_NOT_TRUST"}))
    GeminiHost().preseed(str(tmp_path))
    settings = json.loads((gemini / "settings.json").read_text())
    assert settings["security"]["auth"]["selectedType"] == "oauth-personal"
    assert settings["ui"] == {"theme": "Dracula"}
    assert settings["general"] == {"enableAutoUpdate": False, "enableAutoUpdateNotification": False}
    assert settings["privacy"] == {"usageStatisticsEnabled": False}
    trusted = json.loads((gemini / "trustedFolders.json").read_text())
    assert trusted == {"/elsewhere": "DO_NOT_TRUST", str(tmp_path): "TRUST_FOLDER"}


def test_gemini_preseed_chooses_api_key_sign_in_when_none_is_set(tmp_path: Path, isolated_home: Path) -> None:
    GeminiHost().preseed(str(tmp_path))
    settings = json.loads((isolated_home / "user" / ".gemini" / "settings.json").read_text())
    assert settings["security"] == {"auth": {"selectedType": "gemini-api-key"}}


def test_gemini_preseed_refuses_a_broken_file(tmp_path: Path, isolated_home: Path) -> None:
    settings = isolated_home / "user" / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{ // a comment\n}")
    with pytest.raises(UnreadableJSON):
        GeminiHost().preseed(str(tmp_path))
    assert settings.read_text() == "{ // a comment\n}"


def _rollout(home: Path, session: str, cwd: Path, started: dt.datetime) -> None:
    day = home / ".codex" / "sessions" / started.strftime("%Y/%m/%d")
    day.mkdir(parents=True, exist_ok=True)
    meta = {"type": "session_meta", "payload": {"id": session, "cwd": str(cwd), "timestamp": started.isoformat()}}
    (day / f"rollout-{started:%Y-%m-%dT%H-%M-%S}-{session}.jsonl").write_text(json.dumps(meta) + "\n{}\n")


def test_codex_session_is_the_first_in_the_folder_since_the_start(tmp_path: Path, isolated_home: Path) -> None:
    home = isolated_home / "user"
    _rollout(home, "old", tmp_path, NOW - dt.timedelta(hours=1))
    _rollout(home, "elsewhere", tmp_path / "other", NOW + dt.timedelta(seconds=1))
    _rollout(home, "mine", tmp_path, NOW + dt.timedelta(seconds=2))
    _rollout(home, "later", tmp_path, NOW + dt.timedelta(seconds=30))
    record = _record(tmp_path, "codex", created_at=NOW)
    assert CODEX.session_id(record) == "mine"
    assert CODEX.resume_command(record) == [
        "/opt/codex", "--no-daemon", "--ask-for-approval", "on-request", "resume", "mine"]
    assert CODEX.resume_command(_record(tmp_path, "codex", session_id="given"))[-1] == "given"


def test_gemini_session_comes_from_the_command_line_or_the_transcripts(tmp_path: Path, isolated_home: Path) -> None:
    host = GeminiHost(HostOptions("/opt/gemini"))
    assert host.session_id(_record(tmp_path, "gemini", created_at=NOW, session_id="chosen")) == "chosen"
    project = isolated_home / "user" / ".gemini" / "tmp" / "work"
    (project / "chats").mkdir(parents=True)
    (project / ".project_root").write_text(str(tmp_path))
    header = {"sessionId": "from-disk", "startTime": (NOW + dt.timedelta(seconds=1)).isoformat(), "kind": "main"}
    (project / "chats" / "session-x-fromdisk.jsonl").write_text(json.dumps(header) + "\n")
    fresh = GeminiHost(HostOptions("/opt/gemini"))
    assert fresh.session_id(_record(tmp_path, "gemini", created_at=NOW)) == "from-disk"
    assert fresh.resume_command(_record(tmp_path, "gemini", created_at=NOW))[-2:] == ["--resume", "from-disk"]


def test_no_session_before_the_first_message(tmp_path: Path) -> None:
    assert CODEX.session_id(_record(tmp_path, "codex")) is None
    assert GEMINI.session_id(_record(tmp_path, "gemini")) is None


def test_consent_gaps_name_what_the_user_must_set_up(isolated_home: Path) -> None:
    assert "codex login" in CODEX.consent_gaps({})[0]
    codex_config = isolated_home / "user" / ".codex" / "config.toml"
    codex_config.parent.mkdir()
    codex_config.write_text('model_provider = "p"\n[model_providers.p]\nenv_key = "P_KEY"\n')
    assert "P_KEY" in CODEX.consent_gaps({})[0]
    assert CODEX.consent_gaps({"P_KEY": "k"}) == []
    assert "GEMINI_API_KEY" in GEMINI.consent_gaps({})[0]
    assert GEMINI.consent_gaps({"GEMINI_API_KEY": "k"}) == []


@pytest.mark.realcli
@pytest.mark.parametrize("host", sorted(CASES))
def test_version_of_the_pinned_cli_is_a_known_one(host: str) -> None:
    fail_unless_loopback_only()
    profile = {"codex": CodexHost, "gemini": GeminiHost}[host](HostOptions(str(CASES[host].binary)))
    assert profile.version() in profile.known_versions()
