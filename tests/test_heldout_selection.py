"""The held-out check's selection (``PAO_HELDOUT_CLIS``): named versions replace a CLI's pins, from their own folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pao_testing import claude_cli, hostrun
from pao_testing.heldout import heldout_versions, installed_binary

ROOT = Path(__file__).resolve().parents[1]


def _install(root: Path, name: str, version: str, binary: str) -> Path:
    path = root / name / version / "node_modules" / ".bin" / binary
    path.parent.mkdir(parents=True)
    path.write_text("#!/bin/sh\n")
    return path


def test_named_versions_replace_the_pins_of_their_cli_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAO_HELDOUT_DIR", str(tmp_path))
    monkeypatch.setenv("PAO_HELDOUT_CLIS", "claude-code@2.1.331 claude-code@2.1.100 gemini@0.60.0")
    gemini = _install(tmp_path, "gemini", "0.60.0", "gemini")
    claude = _install(tmp_path, "claude-code", "2.1.100", "claude")
    assert claude_cli.pinned_versions() == ["2.1.331", "2.1.100"] and claude_cli.cli_path("2.1.100") == claude
    assert hostrun.pinned_versions("PAO_GEMINI_VERSIONS") == ["0.60.0"]
    assert hostrun.pinned_cli("gemini", "gemini", "PAO_GEMINI_VERSIONS") == gemini
    monkeypatch.delenv("PAO_CODEX_VERSIONS", raising=False)
    assert hostrun.pinned_versions("PAO_CODEX_VERSIONS") == ["0.171.0"]  # not named: its pin (scripts/pins.sh)
    codex = hostrun.pinned_cli("codex", "codex", "PAO_CODEX_VERSIONS")
    assert codex == ROOT / ".cache" / "codex" / "0.171.0" / "node_modules" / ".bin" / "codex"
    with pytest.raises(FileNotFoundError, match="2.1.331 is not installed"):
        claude_cli.cli_path("2.1.331")


def test_unset_changes_nothing_and_a_bad_word_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PAO_HELDOUT_CLIS", raising=False)
    assert heldout_versions("claude-code") == []
    assert installed_binary("gemini", "0.0.0", "gemini") == ROOT / ".cache" / "gemini" / "0.0.0" / "node_modules" / ".bin" / "gemini"
    with pytest.raises(ValueError, match="aider@1.0 is not NAME@VERSION"):
        heldout_versions("codex", {"PAO_HELDOUT_CLIS": "codex@0.169.1 aider@1.0"})
    with pytest.raises(ValueError, match="codex is not NAME@VERSION"):
        heldout_versions("codex", {"PAO_HELDOUT_CLIS": "codex"})


def test_every_claude_code_test_runs_once_per_named_version() -> None:
    """Unmarked tests run the newest pin only by default; held out, each named version (collection only)."""
    env = {**os.environ, "PAO_HELDOUT_CLIS": "claude-code@9.0.1 claude-code@9.0.2"}
    collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                                "tests/test_session_end_realcli.py"], cwd=ROOT, env=env, capture_output=True,
                               text=True, timeout=120)
    ids = [line.rpartition("[") for line in collected.stdout.splitlines() if "::" in line]
    assert collected.returncode == 0 and len(ids) >= 4, collected.stdout + collected.stderr
    versions: dict[str, set[str]] = {}
    for test, _, version in ids:
        versions.setdefault(test, set()).add(version)
    assert all(named == {"9.0.1]", "9.0.2]"} for named in versions.values()), versions


def test_a_malformed_selection_stops_pytest_with_one_line() -> None:
    env = {**os.environ, "PAO_HELDOUT_CLIS": "aider@1"}
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "tests/test_heldout_selection.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    said = (run.stdout + run.stderr).strip()
    assert run.returncode != 0 and said == "ERROR: PAO_HELDOUT_CLIS: aider@1 is not NAME@VERSION with NAME one of " \
        "claude-code, codex, gemini", said
