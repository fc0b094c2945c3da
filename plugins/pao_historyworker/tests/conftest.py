"""Fixtures of the pao-historyworker tests: isolated pao homes, the eval transcripts, real servers."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Iterator

import pytest
from history_support import eval_transcripts, pao, serve


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """An environment with a private PAO_HOME and HOME and only this plugin loaded."""
    home = tmp_path / "home"
    home.mkdir()
    values = {
        "PAO_HOME": str(tmp_path / "pao-home"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "PAO_LOAD_PLUGINS": "pao-historyworker",
    }
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    for key in ("PAO_HISTORY_URL", "PAO_HISTORY_TOKEN", "PAO_CONFIG"):
        monkeypatch.delenv(key, raising=False)
    return {**os.environ, **values}


@pytest.fixture
def transcripts(tmp_path: Path) -> Path:
    """A private copy of the eval corpus's Claude Code transcripts."""
    target = tmp_path / "projects"
    shutil.copytree(eval_transcripts(), target)
    return target


@pytest.fixture
def indexed(env: dict[str, str], transcripts: Path) -> Path:
    """The eval transcripts indexed into the private PAO_HOME."""
    pao(env, "history", "index", str(transcripts))
    return transcripts


@pytest.fixture
def served(env: dict[str, str], indexed: Path) -> Iterator[str]:
    """``pao history serve`` on a free loopback port; yields the URL from its first line."""
    yield from serve(env)


@pytest.fixture
def serve_with_token(env: dict[str, str], indexed: Path) -> Iterator[str]:
    yield from serve(env, "--token", "s3cret-token")
