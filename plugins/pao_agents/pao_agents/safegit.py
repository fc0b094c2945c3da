"""pao's own ``git`` runs, with nothing of the repository's that executes a program.

A repository's ``.git/config`` and ``.git/hooks`` come with the folder (a copied or
unpacked repository brings its own). Of what pao runs (``rev-parse``, ``worktree
add``, ``status``, ``worktree remove``/``prune``) these would start a program: hooks
(``post-checkout``, ``reference-transaction``; ``core.hooksPath``), the file-system
monitor (``core.fsmonitor``), the clean/smudge/process filters (a checkout smudges, ``status`` may clean), merge
drivers (``pao finish`` merges), and submodule recursion. So every run sets ``core.hooksPath=/dev/null``,
``core.fsmonitor=false`` and ``submodule.recurse=false``, and empties each filter and merge driver the
repository's own configuration (not the user's: git-lfs stays) defines. pao's commands
never reach a remote, so ``core.sshCommand``, credential helpers and the like never run.
"""

from __future__ import annotations

import os
import shutil
import subprocess

SAFE = ("core.hooksPath=/dev/null", "core.fsmonitor=false", "submodule.recurse=false")
_REPOSITORY_SCOPES = ("local", "worktree")


def git_binary() -> str | None:
    return shutil.which("git")


def _environment() -> dict[str, str]:
    return {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}


def _run(git: str, folder: str, args: list[str], timeout: float,
         settings: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    overrides = [word for setting in (*SAFE, *settings) for word in ("-c", setting)]
    return subprocess.run([git, *overrides, "-C", folder, *args], capture_output=True, text=True, errors="replace",
                          timeout=timeout, check=False, env=_environment(), stdin=subprocess.DEVNULL)


def repository_programs(git: str, folder: str, timeout: float = 10) -> list[str]:
    """The keys of the repository's own configuration that name a program git would run for pao: filter drivers
    (``filter.NAME.clean``...) and merge drivers (``merge.NAME.driver``: ``pao finish`` merges)."""
    done = _run(git, folder, ["config", "--show-scope", "--includes", "--get-regexp",
                              r"^(filter\..*\.(clean|smudge|process)|merge\..*\.driver)$"], timeout)
    keys = []
    for line in done.stdout.splitlines():
        scope, _, rest = line.partition("\t")
        key = rest.split(None, 1)[0] if rest else ""
        if scope in _REPOSITORY_SCOPES and key.count(".") >= 2:
            keys.append(key)
    return sorted(set(keys))


def _neutralised(key: str) -> tuple[str, ...]:
    """Overrides that keep git from running ``key``'s program: a filter passes data through; an emptied merge
    driver makes that file's merge fail (git runs nothing), which ``pao finish`` undoes and reports."""
    if key.startswith("merge."):
        return (f"{key}=",)
    name = key[len("filter."):key.rindex(".")]
    return tuple(f"filter.{name}.{part}" for part in ("clean=", "smudge=", "process=", "required=false"))


def run_git(git: str, folder: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``git -C FOLDER ARGS`` without the repository's hooks, monitor, submodules, filters or merge drivers (a
    checkout smudges, ``status`` and ``worktree remove`` may clean to compare, a merge may call a driver)."""
    overrides = tuple(dict.fromkeys(setting for key in repository_programs(git, folder) for setting in _neutralised(key)))
    return _run(git, folder, list(args), timeout, overrides)
