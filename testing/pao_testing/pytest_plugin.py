"""pytest fixtures for tests that run the real Claude Code CLI (registered through ``pytest11``).

- ``isolated_network``: FAILS the test when it runs as root outside a loopback-only
  network namespace (scripts/test runs the suite inside ``unshare --net``).
- ``anthropic_stub``: a started loopback Messages API stub, recording requests.
- ``claude_home``: a temporary HOME pre-seeded as a returning user (onboarding done,
  the dummy key approved); never the real user's HOME.
- ``claude_version`` / ``claude_cli``: the newest pinned CLI version and its path; a test marked
  ``every_claude_pin(reason)`` (where the pins behave differently) runs once per pinned version; with
  ``PAO_HELDOUT_CLIS`` naming Claude Code versions (``pao_testing.heldout``), every test runs once per named version.
- ``claude_env``: the CLI's environment (stub URL, dummy key, no updater, no npm).
- ``private_tmux``: a tmux server on a private socket, killed after the test.
- ``private_tmp``: the test's own folder for ``tempfile`` (launch specs, paste files).
- ``loopback_sshd``: a second machine on this one: sshd on 127.0.0.1 with an account of its own
  (``pao_testing.sshd``), removed after the test.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from pao_testing.anthropic_stub import AnthropicStub
from pao_testing.claude_cli import PrivateTmux, cli_environment, cli_path, isolation_problem, pinned_versions, seed_home
from pao_testing.heldout import heldout_versions
from pao_testing.sshd import LoopbackSshd


def newest_first(versions: list[str]) -> list[str]:
    """``versions`` newest first (numeric order: 2.1.332 before 2.0.77)."""
    return sorted(versions, key=lambda version: tuple(int(part) for part in version.split(".") if part.isdigit()),
                  reverse=True)


def pytest_configure(config: pytest.Config) -> None:
    try:
        heldout_versions("claude-code")  # a malformed PAO_HELDOUT_CLIS: one line, before any test
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.addinivalue_line(
        "markers", "every_claude_pin(reason): run once per pinned Claude Code version (they behave differently here)"
    )


def pytest_report_header(config: pytest.Config) -> str | None:
    named = os.environ.get("PAO_HELDOUT_CLIS")
    return f"held-out CLI versions (PAO_HELDOUT_CLIS): {named}" if named else None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # Each real-CLI run costs seconds; where the pins behave alike one (the newest) tests pao's logic,
    # and the marked tests (the full spawn path among them) still run every pin.
    if "claude_version" in metafunc.fixturenames:
        versions = newest_first(pinned_versions())
        if metafunc.definition.get_closest_marker("every_claude_pin") is None and not heldout_versions("claude-code"):
            versions = versions[:1]
        metafunc.parametrize("claude_version", versions, scope="function")


@pytest.fixture
def isolated_network() -> None:
    problem = isolation_problem()
    if problem:
        pytest.fail(problem, pytrace=False)


@pytest.fixture
def anthropic_stub() -> Iterator[AnthropicStub]:
    with AnthropicStub() as stub:
        yield stub


@pytest.fixture
def claude_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return seed_home(tmp_path_factory.mktemp("claude-home"))


@pytest.fixture
def claude_cli(claude_version: str) -> Path:
    try:
        return cli_path(claude_version)
    except FileNotFoundError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture
def claude_env(isolated_network: None, claude_home: Path, anthropic_stub: AnthropicStub) -> dict[str, str]:
    return cli_environment(claude_home, anthropic_stub.url)


@pytest.fixture
def private_tmux() -> Iterator[PrivateTmux]:
    tmux = PrivateTmux(f"pao-test-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        yield tmux
    finally:
        tmux.kill_server()


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder of the test's own where ``tempfile`` puts files, to check none is left behind."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture
def loopback_sshd() -> Iterator[LoopbackSshd]:
    server = LoopbackSshd.start()
    try:
        yield server
    finally:
        server.close()
