"""Configuration: TOML file, environment overrides, one-line errors, masking."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from pao_core.config import load_config, mask_url
from pao_core.errors import ConfigError


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


def test_plugin_options_are_structured_with_errors_naming_the_table(pao_config_file: Path) -> None:
    pao_config_file.write_text('[backends.mine]\nurl = "x"\nlimit = "many"\n')
    config = load_config()
    with pytest.raises(ConfigError, match=r"backends\.mine\.limit"):
        config.options("backends", "mine", PluginOptions)
    assert config.options("backends", "other", PluginOptions) == PluginOptions()


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
