"""Running the real Claude Code CLI in tests: where it is, a returning user's HOME, its environment.

The pinned CLIs are installed by ``scripts/setup --test`` under
``.cache/claude-code/<version>/node_modules/.bin/claude`` (versions in
``scripts/pins.sh``). A test plays a returning user: onboarding done and the dummy
API key approved, written into a temporary ``~/.claude.json`` before the CLI starts;
without them the CLI tries to reach the vendor's servers. As root, tests run inside
a loopback-only network namespace (``unshare --net``) and must check they are in one.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Mapping, Sequence

import attrs

from pao_testing.heldout import heldout_versions, installed_binary

REPO_ROOT = Path(__file__).resolve().parents[2]
DUMMY_API_KEY = "sk-ant-api03-pao-test-dummy-key-0123456789abcdefghij"
"""Never a real key: the CLI only ever talks to the loopback stub."""


def pinned_versions(environ: Mapping[str, str] | None = None) -> list[str]:
    """The CLI versions under test: the held-out ones ``PAO_HELDOUT_CLIS`` names (:mod:`pao_testing.heldout`), else
    ``PAO_CLAUDE_VERSIONS`` if set (empty: none), else ``scripts/pins.sh``."""
    env = os.environ if environ is None else environ
    heldout = heldout_versions("claude-code", env)
    if heldout:
        return heldout
    if "PAO_CLAUDE_VERSIONS" in env:
        return env["PAO_CLAUDE_VERSIONS"].split()
    try:
        text = (REPO_ROOT / "scripts" / "pins.sh").read_text(encoding="utf-8")
    except FileNotFoundError:  # installed without the repository: only PAO_CLAUDE_VERSIONS says
        return []
    match = re.search(r'PAO_CLAUDE_VERSIONS-([^}"]*)\}', text)
    return match.group(1).split() if match else []


def cli_path(version: str) -> Path:
    """The installed CLI of ``version``; raises with the set-up command when it is missing."""
    cache = os.environ.get("PAO_CLAUDE_CACHE")
    path = Path(cache, version, "node_modules", ".bin", "claude") if cache else installed_binary("claude-code", version, "claude")
    if not path.exists():
        raise FileNotFoundError(f"Claude Code {version} is not installed at {path}: run scripts/setup --test")
    return path


def network_interfaces() -> list[str]:
    """The interfaces of this process's network namespace.

    Read from ``/proc/self/net/dev``: ``/sys/class/net`` shows the namespace that
    mounted sysfs, so inside ``unshare --net`` it still lists the host's interfaces.
    """
    try:
        lines = Path("/proc/self/net/dev").read_text(encoding="ascii").splitlines()[2:]
    except OSError:
        return []
    return sorted(line.split(":", 1)[0].strip() for line in lines if ":" in line)


def loopback_only() -> bool:
    """True when the only network interface here is ``lo`` (a fresh ``unshare --net``)."""
    return network_interfaces() == ["lo"]


def isolation_problem() -> str | None:
    """Why a real CLI must not start here, or ``None``: as root, only inside a loopback-only namespace."""
    if os.geteuid() == 0 and not loopback_only():
        interfaces = ", ".join(network_interfaces()) or "?"
        return (
            f"running as root with network interfaces {interfaces}: real-CLI tests must run inside "
            "`unshare --net` (scripts/test does this)"
        )
    return None


def rerun_isolated(script: str, argv: Sequence[str]) -> int | None:
    """For a bench run as root outside a loopback-only namespace: run ``script ARGV`` again inside one
    (``unshare --net``) and return its exit code; ``None`` when this process may run CLIs already."""
    if not isolation_problem():
        return None
    shell = 'ip link set lo up && exec "$0" "$@"'
    return subprocess.call(["unshare", "--net", "--", "sh", "-c", shell, sys.executable, script, *argv])


def runs_and_json(argv: Sequence[str], default: int = 5) -> tuple[int, bool]:
    """A bench's arguments: ``[RUNS] [--json]``."""
    numbers = [arg for arg in argv if arg != "--json"]
    return (int(numbers[0]) if numbers else default), "--json" in argv


def returning_user_config(api_key: str = DUMMY_API_KEY) -> dict:
    """The ``~/.claude.json`` of a user who finished onboarding and approved ``api_key``.

    The marketplace keys stop 2.0.x from cloning the official plugin marketplace.
    """
    return {
        "hasCompletedOnboarding": True,
        "customApiKeyResponses": {"approved": [api_key[-20:]], "rejected": []},
        "officialMarketplaceAutoInstallAttempted": True,
        "officialMarketplaceAutoInstalled": True,
    }


def seed_home(home: Path, api_key: str = DUMMY_API_KEY, *, extra: Mapping | None = None) -> Path:
    """Write a returning user's ``~/.claude.json`` into ``home`` (plus ``extra`` keys); return ``home``."""
    home.mkdir(parents=True, exist_ok=True)
    config = returning_user_config(api_key)
    config.update(extra or {})
    (home / ".claude.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    return home


def cli_environment(home: Path, base_url: str, api_key: str = DUMMY_API_KEY) -> dict[str, str]:
    """The environment a test CLI runs with: the stub, a dummy key, no updater, no npm, no telemetry."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": api_key,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
        "npm_config_offline": "true",
        "npm_config_registry": "http://127.0.0.1:9/",
    }
    if os.geteuid() == 0:
        env["IS_SANDBOX"] = "1"  # the CLI refuses bypass mode as root otherwise
    return env


def _tmux_server_env() -> dict[str, str]:
    return {key: os.environ[key] for key in ("PATH", "LANG", "TMPDIR", "TMUX_TMPDIR") if key in os.environ}


@attrs.define
class PrivateTmux:
    """A tmux server on a private socket, for driving a CLI directly in tests and recordings.

    Panes stay after their process exits (``remain-on-exit``) so its last words can be read.
    """

    socket: str
    width: int = 120
    height: int = 40

    def _tmux(self, *args: str, input: str | None = None) -> str:  # noqa: A002
        result = subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            input=input,
            capture_output=True,
            text=True,
            check=True,
            env=_tmux_server_env(),  # panes get only the env given to start(): nothing leaks from the test run
        )
        return result.stdout

    def start(self, name: str, folder: str, command: Sequence[str], env: Mapping[str, str]) -> str:
        """Start ``command`` in a new session ``name``; return the pane target."""
        args = ["new-session", "-d", "-s", name, "-x", str(self.width), "-y", str(self.height), "-c", folder]
        for key, value in env.items():
            args += ["-e", f"{key}={value}"]
        # One tmux invocation, so the pane is held open on exit before the CLI can exit.
        self._tmux("start-server", ";", "set-option", "-g", "remain-on-exit", "on", ";", *args, "--", *command)
        return f"{name}:0.0"

    def capture(self, target: str, history: bool = False) -> str:
        return self._tmux("capture-pane", "-p", *(["-S", "-"] if history else []), "-t", target)

    def paste(self, target: str, text: str) -> None:
        self._tmux("load-buffer", "-b", "pao-test", "-", input=text)
        self._tmux("paste-buffer", "-p", "-d", "-b", "pao-test", "-t", target)

    def press(self, target: str, key: str) -> None:
        self._tmux("send-keys", "-t", target, key)

    def pane_command(self, target: str) -> str:
        return self._tmux("display-message", "-p", "-t", target, "#{pane_current_command}").strip()

    def kill_server(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)

    def wait_for_screen(self, target: str, predicate, timeout: float, interval: float = 0.05) -> tuple[str, float]:
        """Capture until ``predicate(screen)`` is true; return the screen and the seconds it took."""
        started = time.monotonic()
        screen = ""
        while time.monotonic() - started < timeout:
            screen = self.capture(target)
            if predicate(screen):
                return screen, time.monotonic() - started
            time.sleep(interval)
        raise TimeoutError(f"screen did not match within {timeout:.0f} s; last screen:\n{screen}")
