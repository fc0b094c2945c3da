"""Fixtures of the pao-historyworker tests: isolated pao homes, the eval transcripts, real servers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

EVAL_TRANSCRIPTS = Path(__file__).resolve().parents[3] / ".." / "shared" / "eval" / "transcripts"
PAO = str(Path(sys.executable).with_name("pao"))


def _eval_transcripts() -> Path:
    for candidate in (Path(os.environ.get("PAO_EVAL_DIR", "")) / "transcripts", EVAL_TRANSCRIPTS.resolve()):
        if candidate.is_dir():
            return candidate
    raise RuntimeError("the eval transcripts (shared/eval/transcripts) are missing; set PAO_EVAL_DIR")


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
    shutil.copytree(_eval_transcripts(), target)
    return target


def pao(env: dict[str, str], *args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run the real ``pao`` command line."""
    done = subprocess.run([PAO, *args], env=env, capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"pao {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return done


def pao_json(env: dict[str, str], *args: str) -> dict:
    return json.loads(pao(env, *args, "--json").stdout)


@pytest.fixture
def indexed(env: dict[str, str], transcripts: Path) -> Path:
    """The eval transcripts indexed into the private PAO_HOME."""
    pao(env, "history", "index", str(transcripts))
    return transcripts


@pytest.fixture
def served(env: dict[str, str], indexed: Path) -> Iterator[str]:
    """``pao history serve`` on a free loopback port; yields the URL from its first line."""
    yield from _serve(env)


def _serve(env: dict[str, str], *extra: str) -> Iterator[str]:
    process = subprocess.Popen(
        [PAO, "history", "serve", "--port", "0", *extra], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        first = process.stdout.readline() if process.stdout else ""
        if not first.startswith("PAO_HISTORY_URL="):
            process.kill()
            raise AssertionError(f"serve printed {first!r} first; stderr: {process.stderr.read() if process.stderr else ''}")
        yield first.strip().split("=", 1)[1]
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def serve_with_token(env: dict[str, str], indexed: Path) -> Iterator[str]:
    yield from _serve(env, "--token", "s3cret-token")
