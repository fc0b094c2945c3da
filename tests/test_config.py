"""Configuration: TOML file, environment overrides, one-line errors, masking."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from pao_core.config import ConfigTable
from pao_core.plugins import load_config
from pao_core.errors import ConfigError
from pao_core.sanitize import mask_url


def test_defaults_and_env_overrides(monkeypatch: pytest.MonkeyPatch, isolated_home: Path) -> None:
    monkeypatch.setenv("PAO_POSTGRES_URL", "postgresql://sam:hunter2@db.internal:5432/memory")
    monkeypatch.setenv("PAO_TMUX_SOCKET", "pao-x")
    config = load_config()
    assert config.home == isolated_home / "pao"
    assert config.gather.deadline == 2.0
    assert config.backends["longterm"]["url"].endswith("/memory")
    assert config.terminals["tmux"]["socket"] == "pao-x"


def test_file_values_are_typed(pao_config_file: Path) -> None:
    pao_config_file.write_text('[gather]\ndeadline = 0.5\n[briefing]\nbudget_chars = 4000\n')
    config = load_config()
    assert config.gather.deadline == 0.5 and config.briefing.budget_chars == 4000


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("[gather]\ndeadline = 'soon'\n", ["config.toml", "gather.deadline", "float"]),
        ("[gather]\ndeadlin = 1\n", ["config.toml", "deadlin"]),
        ("[gather\n", ["config.toml", "not valid TOML"]),
        ("home = '/tmp/x'\n", ["PAO_HOME"]),
    ],
)
def test_a_bad_file_gets_one_line_naming_file_and_key(pao_config_file: Path, text: str, fragments, pao) -> None:
    pao_config_file.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config()
    message = str(caught.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message
    result = pao("config")
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


@attrs.frozen
class PluginOptions:
    url: str = ""
    limit: int = 5


MINE = ConfigTable("backends", "mine", PluginOptions, {"PAO_MINE_URL": "url"})


def test_plugin_options_are_structured_with_errors_naming_the_table(pao_config_file: Path) -> None:
    pao_config_file.write_text('[backends.mine]\nurl = "x"\nlimit = 7\n')
    config = load_config(tables=[MINE])
    assert config.options("backends", "mine", PluginOptions) == PluginOptions(url="x", limit=7)
    assert config.options("backends", "other", PluginOptions) == PluginOptions()
    pao_config_file.write_text('[backends.mine]\nurl = "x"\nlimit = "many"\n')
    with pytest.raises(ConfigError, match=r"backends\.mine\.limit"):
        load_config(tables=[MINE])


@pytest.mark.hook("pao_config_tables")
def test_a_plugin_declares_its_table_and_core_checks_it(pao_config_file: Path, monkeypatch) -> None:
    import types

    from pao_core.hookspecs import hookimpl
    from pao_core.plugins import build_plugins

    plugin = types.SimpleNamespace(pao_config_tables=hookimpl(lambda: [MINE]))
    plugins = build_plugins()
    plugins.manager.register(plugin, name="mine")
    pao_config_file.write_text('[backends.mine]\nlimt = 3\n')
    with pytest.raises(ConfigError, match=r"backends\.mine: unknown key 'limt' \(known keys: url, limit\)"):
        load_config(tables=plugins.config_tables(), strict_tables=plugins.complete)
    monkeypatch.setenv("PAO_MINE_URL", "https://m")
    pao_config_file.write_text('[backends.mine]\nlimit = 3\n')
    config = load_config(tables=plugins.config_tables(), strict_tables=plugins.complete)
    assert config.options("backends", "mine", PluginOptions) == PluginOptions(url="https://m", limit=3)


def test_a_declared_table_takes_its_environment_variables(pao_config_file: Path, monkeypatch) -> None:
    monkeypatch.setenv("PAO_MINE_URL", "https://mine.example")
    config = load_config(tables=[MINE])
    assert config.options("backends", "mine", PluginOptions).url == "https://mine.example"
    assert "mine" not in load_config(tables=[]).backends  # no declaration, no override


def test_a_table_no_plugin_declares_is_an_error_unless_plugins_are_limited(pao_config_file: Path) -> None:
    pao_config_file.write_text('[backends.longtem]\nurl = "x"\n')
    with pytest.raises(ConfigError) as caught:
        load_config()
    assert "backends.longtem: no installed plugin reads this table (known backends: history, longterm)" in str(
        caught.value)
    assert load_config(tables=[MINE], strict_tables=False).backends["longtem"] == {"url": "x"}


def test_a_top_level_table_no_plugin_declares_is_an_unknown_key_and_each_must_be_a_table(
        pao_config_file: Path) -> None:
    pao_config_file.write_text("[spwan]\nready_timeout = 5\n")
    with pytest.raises(ConfigError, match=r"unknown key 'spwan' \(known keys: backends, briefing, .*spawn"):
        load_config()
    pao_config_file.write_text("spawn = 3\n")
    with pytest.raises(ConfigError, match=r"\['spawn'\]: expected a mapping$"):  # the core tables' check, first
        load_config()


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ('[backends.longterm]\nurll = "x"\n', ["backends.longterm", "unknown key 'urll'", "known keys: enabled, url"]),
        ('[backends.longterm]\nmode = "fuzzy"\n', ["backends.longterm.mode", "original, ranked"]),
        ('[backends.history]\nprotocol = "soap"\n', ["backends.history.protocol", "must be one of 'mcp', 'jsonrpc'"]),
        ("[terminals.tmux]\nsesion = 'x'\n", ["terminals.tmux", "unknown key 'sesion'", "session"]),
        ("[terminals.terminalapp]\nopen_in = 'pane'\n", ["terminals.terminalapp.open_in", "'window', 'tab'"]),
        ("[hosts.claude-code]\ncomand = 'x'\n", ["hosts.claude-code", "unknown key 'comand'", "command"]),
        ("[hosts.codex]\nargs = 3\n", ["hosts.codex.args"]),
        ("[briefing]\nmax_items = -3\n", ["briefing.max_items", "must be >= 1: -3"]),
        ("[gather]\ndeadline = 0\n", ["gather.deadline", "must be > 0: 0.0"]),
        ("[briefing]\nrelative_floor = 1.5\n", ["briefing.relative_floor", "must be <= 1: 1.5"]),
        ("[spawn]\nready_timeout = -1\n", ["spawn.ready_timeout", "must be > 0: -1.0"]),
    ],
)
def test_every_table_is_checked_at_load_time(pao_config_file: Path, text: str, fragments: list[str], pao) -> None:
    pao_config_file.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config()
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(pao_config_file)), message
    for fragment in fragments:
        assert fragment in message, message
    for argv in (["brief", "x"], ["list"], ["doctor"], ["config"]):
        result = pao(*argv)
        assert (result.returncode, result.stdout) == (2, ""), (argv, result.stderr)
        assert result.stderr == f"pao: {message}\n"


def test_help_version_and_config_path_work_with_a_broken_file(pao_config_file: Path, pao) -> None:
    pao_config_file.write_text("[briefing]\nmax_items = -3\n")
    for argv in (["--help"], ["spawn", "--help"], ["--version"]):
        result = pao(*argv)
        assert result.returncode == 0 and result.stdout and not result.stderr, (argv, result.stderr)
    where = pao("config", "--path")
    assert (where.returncode, where.stdout) == (0, f"{pao_config_file}\n")
    data = json.loads(pao("config", "--path", "--json").stdout)
    assert data["path"] == str(pao_config_file) and data["exists"] is True
    completion = pao("completion", "bash")  # the script runs pao later, when the file may be fixed
    assert (completion.returncode, completion.stderr) == (0, "") and "_ARGCOMPLETE" in completion.stdout


def test_missing_config_named_by_env_is_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PAO_CONFIG", str(tmp_path / "nope.toml"))
    with pytest.raises(ConfigError, match="file not found"):
        load_config()


def test_secrets_are_masked_in_pao_config(pao_config_file: Path, pao) -> None:
    pao_config_file.write_text('[backends.history]\nurl = "https://h.example/rpc"\ntoken = "tok-123456"\n')
    result = pao("config", "--json", env={"PAO_POSTGRES_URL": "postgresql://sam:hunter2@db/memory"})
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["backends"]["longterm"]["url"] == "postgresql://sam:***@db/memory"
    assert data["backends"]["history"]["token"] == "***"
    assert "hunter2" not in result.stdout and "tok-123456" not in result.stdout
    plain = pao("config", env={"PAO_POSTGRES_URL": "postgresql://sam:hunter2@db/memory"})
    assert "hunter2" not in plain.stdout and "backends.longterm.url" in plain.stdout


def test_mask_url_leaves_urls_without_password() -> None:
    assert mask_url("postgresql://sam@db/memory") == "postgresql://sam@db/memory"
    assert mask_url("see postgresql+psycopg://u:p%40ss@h:5/d now") == "see postgresql+psycopg://u:***@h:5/d now"


def test_mask_url_masks_a_password_given_as_a_query_parameter() -> None:
    assert mask_url("postgresql://sam@db/memory?sslmode=require&password=hunter2&x=1") == (
        "postgresql://sam@db/memory?sslmode=require&password=***&x=1")
    assert mask_url("postgres:///memory?PASSWORD=hunter2 then") == "postgres:///memory?PASSWORD=*** then"
    assert mask_url("postgresql://db/m?sslpassword=k3y#frag") == "postgresql://db/m?sslpassword=***#frag"
    assert mask_url("postgresql://db/memory?password_hint=ok") == "postgresql://db/memory?password_hint=ok"


@pytest.mark.parametrize(("url", "password"), [
    ("postgresql://sam:correct horse battery@127.0.0.1:1/memory", "correct horse battery"),
    ("host=127.0.0.1 port=1 user=app password='a b c' dbname=memory", "'a b c'"),
    ("host=127.0.0.1 port=1 user=app password=s3cretpw dbname=memory", "s3cretpw"),
    ("host=127.0.0.1 port=1 password='it\\'s a secret' dbname=memory", "s a secret"),
])
def test_a_password_with_spaces_or_in_a_keyword_dsn_is_masked(pao_config_file: Path, pao, url: str, password: str) -> None:
    env = {"PAO_POSTGRES_URL": url}
    for args in (["config"], ["config", "--json"]):
        result = pao(*args, env=env)
        assert result.returncode == 0 and "***" in result.stdout and password not in result.stdout, result.stdout
    searched = pao("memory", "search", "rostra", env=env)  # whatever libpq says of the URL, the line keeps no password
    assert searched.returncode != 0 and searched.stderr.startswith("pao: ") and "Traceback" not in searched.stderr
    assert password not in searched.stderr and "horse" not in searched.stderr, searched.stderr


def test_mask_url_masks_passwords_with_spaces_and_keyword_dsns_only() -> None:
    assert mask_url("at postgres://app:a b c@db/x now") == "at postgres://app:***@db/x now"
    assert mask_url("postgres://app:p@ss@db:5432/r") == "postgres://app:***@db:5432/r"
    assert mask_url("host=db password='a b c' dbname=x") == "host=db password=*** dbname=x"
    kept = "see http://example.com:8080 and mail me@example.org; host=db dbname=x"
    assert mask_url(kept) == kept
