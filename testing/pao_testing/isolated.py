"""``pao`` as a separate process in a home of its own, with only the named plugins loaded."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_pao(tmp_path: Path, *args: str, load: str, config: str = "") -> subprocess.CompletedProcess[str]:
    """``python -m pao_core ARGS`` with HOME, PAO_HOME and PAO_CONFIG under ``tmp_path`` and ``PAO_LOAD_PLUGINS=load``."""
    config_file = tmp_path / "config.toml"
    config_file.write_text(config, encoding="utf-8")
    env = {**os.environ, "PAO_HOME": str(tmp_path / "home"), "HOME": str(tmp_path), "PAO_CONFIG": str(config_file),
           "PAO_LOAD_PLUGINS": load}
    env.pop("PAO_DISABLE_PLUGINS", None)
    return subprocess.run([sys.executable, "-m", "pao_core", *args], capture_output=True, text=True, env=env,
                          timeout=60, check=False)
