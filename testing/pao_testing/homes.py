"""Fixtures every pao test shares: an isolated home for pao and the user, and a CLI runner.

A test folder's conftest imports them (``from pao_testing.homes import isolated_home, pao, pao_config_file``):
``isolated_home`` is autouse there, so no test of that folder touches a real user's file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pao_core.plugins import reset_plugins


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own HOME, PAO_HOME and (empty) PAO_CONFIG: no real user file is touched."""
    root = tmp_path_factory.mktemp("home")
    home = root / "user"
    pao_home = root / "pao"
    home.mkdir()
    pao_home.mkdir()
    config = root / "config.toml"
    config.write_text("")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PAO_HOME", str(pao_home))
    monkeypatch.setenv("PAO_CONFIG", str(config))
    for name in ("PAO_LOAD_PLUGINS", "PAO_DISABLE_PLUGINS", "PAO_POSTGRES_URL", "PAO_HISTORY_URL",
                 "PAO_CLAUDE_COMMAND", "PAO_TMUX_SOCKET", "PAO_CODEX_COMMAND", "PAO_GEMINI_COMMAND",
                 "CODEX_HOME", "GEMINI_CLI_HOME", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL",
                 "PAO_MEMORY_FILE", "MEMORY_FILE_PATH", "PAO_REGISTRY_URL"):
        monkeypatch.delenv(name, raising=False)
    reset_plugins()
    yield root
    reset_plugins()


@pytest.fixture
def pao_config_file(isolated_home: Path) -> Path:
    """The PAO_CONFIG file of this test (empty until the test writes it)."""
    return isolated_home / "config.toml"


def run_pao(*args: str, env: dict[str, str] | None = None, input: str | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``pao ARGS`` as a separate process with this test's environment."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "pao_core", *args],
        capture_output=True, text=True, env=full_env, input=input, timeout=timeout,
    )


@pytest.fixture
def pao():
    """``pao(*args, env=...)`` runs the CLI in a subprocess and returns the CompletedProcess."""
    return run_pao
