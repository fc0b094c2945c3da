"""``spawn --on``: the remote pao decides the folder's trust on the remote user's files; ``--let-cli-ask`` travels."""

from __future__ import annotations

import argparse

from pao_machines.spawn import _remote_spawn_args


def _args(**given: object) -> argparse.Namespace:
    base = {"topic": "fix it", "terminal": None, "no_nudge": False, "permission_mode": None, "no_mcp": False,
            "let_cli_ask": False}
    return argparse.Namespace(**{**base, **given})


def test_let_cli_ask_reaches_the_remote_spawn_only_when_given() -> None:
    asked = _remote_spawn_args(_args(let_cli_ask=True), "api", "/srv/api", "claude-code", 45.0)
    assert asked.count("--let-cli-ask") == 1 and asked.index("--let-cli-ask") < asked.index("--")  # an option
    assert "--let-cli-ask" not in _remote_spawn_args(_args(), "api", "/srv/api", "claude-code", 45.0)
