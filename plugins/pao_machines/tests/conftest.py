"""Two machines on one box: this test's pao (local) and a second account reached over a loopback sshd.

``box`` (no agent CLI) is enough for the transport, validation and routing faults;
``claude_box`` adds the pinned Claude Code CLI on the remote side, pointed at this
test's loopback Messages stub, for the end-to-end tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from pao_testing.anthropic_stub import AnthropicStub
from pao_testing.claude_cli import cli_environment, cli_path, pinned_versions, seed_home
from pao_testing.two_machines import Box, two_machines


@pytest.fixture
def box(tmp_path: Path) -> Iterator[Box]:
    with two_machines(tmp_path, None, {}) as made:
        yield made


@pytest.fixture
def claude_box(tmp_path: Path, isolated_network: None, anthropic_stub: AnthropicStub) -> Iterator[Box]:
    versions = pinned_versions()
    if not versions:
        pytest.fail("no Claude Code version pinned (scripts/pins.sh)", pytrace=False)
    claude = cli_path(versions[0])
    variables = cli_environment(Path("/nonexistent"), anthropic_stub.url)
    environment = {key: value for key, value in variables.items() if key not in ("PATH", "HOME")}
    with two_machines(tmp_path, claude, environment) as made:
        seed_home(made.sshd.home)
        made.sshd.give(made.sshd.home / ".claude.json")
        yield made
