"""The real host CLIs under test: how each is pointed at its loopback stub.

What a ``HostCase.prepare`` writes is the *user's* side of the setup (a model
provider, an API key), done before pao's pre-seed runs, so tests also prove the
pre-seed keeps it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import attrs

from pao_testing.anthropic_stub import AnthropicStub
from pao_testing.claude_cli import cli_environment, cli_path, seed_home
from pao_testing.gemini_stub import GeminiStub
from pao_testing.hostrun import pinned_cli
from pao_testing.loopback_stub import LoopbackStub
from pao_testing.openai_stub import OpenAIResponsesStub

CODEX_USER_CONFIG = """\
# the user's own Codex settings: pao must keep every line of them
model = "stub-model"   # a comment pao keeps
model_provider = "loopback"

[model_providers.loopback]
name = "Loopback stub"
base_url = "{base_url}"
wire_api = "responses"
env_key = "LOOPBACK_OPENAI_KEY"  # not PAO_*: pao keeps its own credentials out of agents
"""


def _codex_user_setup(home: Path, stub: LoopbackStub) -> dict[str, str]:
    assert isinstance(stub, OpenAIResponsesStub)
    (home / ".codex").mkdir(parents=True, exist_ok=True)
    (home / ".codex" / "config.toml").write_text(CODEX_USER_CONFIG.format(base_url=stub.base_url), encoding="utf-8")
    return {"LOOPBACK_OPENAI_KEY": "sk-loopback"}


def _gemini_user_setup(home: Path, stub: LoopbackStub) -> dict[str, str]:
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    settings = {"ui": {"theme": "Default"}, "general": {"vimMode": False}}
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
    return {"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": "loopback-key"}


def _claude_user_setup(home: Path, stub: LoopbackStub) -> dict[str, str]:
    seed_home(home)
    own = ("HOME", "PATH", "TERM", "LANG")
    return {key: value for key, value in cli_environment(home, stub.url).items() if key not in own}


@attrs.frozen
class HostCase:
    """One host CLI under test: its binary, its stub, the user's setup and the model route."""

    host: str
    binary: Path | None
    make_stub: Callable[[], LoopbackStub]
    user_setup: Callable[[Path, LoopbackStub], dict[str, str]]
    model_route: str
    """The route (suffix) of the request that carries the conversation to the model."""

    @property
    def command_variable(self) -> str:
        """The environment variable that points pao at this CLI."""
        return "PAO_CLAUDE_COMMAND" if self.host == "claude-code" else f"PAO_{self.host.upper()}_COMMAND"


CASES: dict[str, HostCase] = {
    "codex": HostCase(
        "codex", pinned_cli("codex", "codex", "PAO_CODEX_VERSIONS"), OpenAIResponsesStub, _codex_user_setup, "/v1/responses"
    ),
    "gemini": HostCase(
        "gemini", pinned_cli("gemini", "gemini", "PAO_GEMINI_VERSIONS"), GeminiStub, _gemini_user_setup,
        ":streamGenerateContent",
    ),
}


def claude_case(version: str) -> HostCase:
    """One pinned Claude Code version (``scripts/pins.sh``); its binary must be installed."""
    return HostCase("claude-code", cli_path(version), AnthropicStub, _claude_user_setup, "/v1/messages")
