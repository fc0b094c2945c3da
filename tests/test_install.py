"""The daily-use install: ``scripts/install`` (``uv tool install`` from the checkout, with every plugin) in a scratch folder.

Runs offline, as the tests do: ``scripts/setup --test`` filled uv's cache (``.cache/uv``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = ["pao-agents", "pao-eval", "pao-historyworker", "pao-hosts", "pao-machines", "pao-mcp", "pao-monitor",
           "pao-postgres", "pao-terminalapp", "pao-tmux"]


def test_scripts_install_puts_pao_and_every_plugin_on_a_path(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "UV": str(Path(sys.executable).with_name("uv")),
        "UV_OFFLINE": "1",
        "UV_CACHE_DIR": str(ROOT / ".cache" / "uv"),
        "UV_TOOL_DIR": str(tmp_path / "tools"),
        "UV_TOOL_BIN_DIR": str(tmp_path / "bin"),
        "HOME": str(tmp_path / "home"),
        "PAO_HOME": str(tmp_path / "pao"),
    }
    env.pop("PAO_CONFIG", None)
    env.pop("VIRTUAL_ENV", None)
    installed = subprocess.run([str(ROOT / "scripts" / "install")], env=env, capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stderr[-2000:]
    pao = tmp_path / "bin" / "pao"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(pao), *args], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)

    assert run("--version").stdout.startswith("pao ")
    report = json.loads(run("plugins", "--json").stdout)
    assert sorted({row["distribution"] for row in report["plugins"] if not row["default"]}) == PLUGINS
    assert report["failures"] == []
    assert run("config", "--path").stdout == f"{tmp_path}/home/.config/pao/config.toml\n"
    assert run("list", "--json").stdout.strip() == '{\n  "agents": []\n}'
    # the sentence model came along (installed without its torch dependencies)
    assert json.loads(run("memory", "stats", "--json").stdout)["retrieval"] == "semantic + lexical (all-MiniLM-L6-v2)"
    assert str(ROOT) not in Path(pao).resolve().as_posix()  # its own environment, not the checkout's .venv


def test_the_readme_s_install_command_names_every_plugin_the_script_installs() -> None:
    """A user who types the README's command instead of running scripts/install gets the same set (a missing
    pao_embeddings, not on PyPI, makes uv's resolution fail)."""
    import re

    script = (ROOT / "scripts" / "install").read_text(encoding="utf-8")
    installed = re.search(r"^PLUGINS=\(([^)]*)\)", script, re.M)
    assert installed is not None
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert set(re.findall(r"--with \./plugins/(\w+)", readme)) == set(installed[1].split())
