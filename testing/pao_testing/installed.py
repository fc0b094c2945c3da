"""A user's installed site: plugin distributions installed the way ``pip install --target`` does, and
``pao`` run as its own process that reports which modules it imported."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def pip_install_target(source: Path, target: Path) -> None:
    """Install a distribution into ``target`` the way a user's ``pip install --target`` does (offline), with
    uv's pip (the test tools' installer: 0.5 s where pip's own start-up makes it 2 s)."""
    subprocess.run(
        [str(Path(sys.executable).with_name("uv")), "pip", "install", "--quiet", "--python", sys.executable,
         "--no-deps", "--offline", "--no-build-isolation", "--target", str(target), str(source)],
        check=True, capture_output=True, text=True, timeout=180,
    )


def install_module_plugin(source: Path, target: Path, name: str, code: str) -> None:
    """Build ``pao-NAME`` (one module ``pao_NAME``, entry point ``NAME``) in ``source``; install it into ``target``."""
    source.mkdir(parents=True, exist_ok=True)
    (source / "pyproject.toml").write_text(textwrap.dedent(f"""
        [build-system]
        requires = ["setuptools>=68"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "pao-{name}"
        version = "0.0.1"
        [project.entry-points.pao]
        {name} = "pao_{name}"
        [tool.setuptools]
        py-modules = ["pao_{name}"]
    """))
    (source / f"pao_{name}.py").write_text(code)
    pip_install_target(source, target)


MODULES_AFTER = (
    "import sys\n"
    "from pao_core.cli import main\n"
    "try:\n"
    "    code = main(sys.argv[1:])\n"
    "except SystemExit as exit:\n"
    "    code = exit.code\n"
    "print('MODULES', ' '.join(sorted(sys.modules)), file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``pao ARGS`` as its own process, reporting on stderr which modules it imported."""
    return subprocess.run([sys.executable, "-c", MODULES_AFTER, *args], check=False, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


def imported(result: subprocess.CompletedProcess[str]) -> set[str]:
    line = next(line for line in result.stderr.splitlines() if line.startswith("MODULES "))
    return set(line.split()[1:])


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """An empty folder on PYTHONPATH, where a user's ``pip install --target`` puts distributions."""
    folder = tmp_path / "site"
    folder.mkdir()
    return folder
