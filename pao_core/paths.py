"""Where pao's files are (the configuration file, the state folder, the cache) and this machine's name, found
with the standard library and platformdirs alone (commands read them before any plugin or record loads)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

import platformdirs


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where the configuration file is read from."""
    env = os.environ if environ is None else environ
    return Path(env["PAO_CONFIG"]).expanduser() if env.get("PAO_CONFIG") else Path(platformdirs.user_config_dir("pao")) / "config.toml"


def home_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where pao keeps its state (registry, embedded stores, logs)."""
    env = os.environ if environ is None else environ
    return Path(env["PAO_HOME"]).expanduser() if env.get("PAO_HOME") else Path(platformdirs.user_data_dir("pao"))


def cache_path(name: str) -> str:
    """A file in pao's cache folder (what can be rebuilt: the plugin index)."""
    return os.path.join(platformdirs.user_cache_dir("pao"), name)


def host_name() -> str:
    """The short host name (``build`` for ``build.example.com``): a machine's name by default."""
    import socket  # only the registry needs it: start-up stays light

    return socket.gethostname().split(".")[0] or "localhost"
