"""``pao spawn --worktree``: an agent in a git worktree of its own, on branch ``pao/NAME``.

The worktree lives under ``$PAO_HOME/worktrees/NAME`` (never inside the user's
folder). ``pao kill --clean`` removes it when nothing in it is uncommitted; the
branch stays, with whatever the agent committed.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from pao_agents.safegit import git_binary, run_git
from pao_core.errors import PaoError, ValidationError

BRANCH_PREFIX = "pao/"


def _git(*args: str, cwd: str) -> subprocess.CompletedProcess[str]:
    """git without the repository's hooks, monitor, submodules or filters (``pao_agents.safegit``)."""
    git = git_binary()
    if git is None:
        raise ValidationError("--worktree needs git on PATH")
    return run_git(git, cwd, *args)


def _failed(done: subprocess.CompletedProcess[str]) -> str:
    lines = (done.stderr or done.stdout).strip().splitlines()
    return lines[-1] if lines else f"git exited with {done.returncode}"


def add_worktree(folder: str, home: str | os.PathLike[str], name: str) -> dict[str, str]:
    """A new worktree of ``folder``'s repository on branch ``pao/NAME``, at the folder's place in the tree."""
    top = _git("rev-parse", "--show-toplevel", cwd=folder)
    if top.returncode != 0:
        raise ValidationError(f"--worktree: {folder} is not in a git repository")
    root = top.stdout.strip()
    inside = os.path.relpath(os.path.realpath(folder), os.path.realpath(root))
    path = Path(home) / "worktrees" / name
    if path.exists():
        raise ValidationError(f"--worktree: {path} already exists; remove it or pick another --name")
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    branch = BRANCH_PREFIX + name
    done = _git("worktree", "add", "-b", branch, str(path), "HEAD", cwd=root)
    if done.returncode != 0:
        raise PaoError(f"--worktree: git worktree add failed: {_failed(done)}")
    agent_folder = path if inside == "." else path / inside
    return {"path": str(agent_folder), "root": str(path), "repo": root, "branch": branch}


def uncommitted(worktree: dict[str, str]) -> list[str]:
    """The worktree's uncommitted changes (``git status --porcelain`` lines); empty when clean or gone."""
    if not os.path.isdir(worktree["root"]):
        return []
    done = _git("status", "--porcelain", "--untracked-files=all", cwd=worktree["root"])
    if done.returncode != 0:
        raise PaoError(f"cannot read the state of worktree {worktree['root']}: {_failed(done)}")
    return done.stdout.splitlines()


def remove_worktree(worktree: dict[str, str]) -> None:
    """Remove a clean worktree (git refuses a dirty one); its branch ``pao/NAME`` stays."""
    if not os.path.isdir(worktree["root"]):
        _git("worktree", "prune", cwd=worktree["repo"])
        return
    done = _git("worktree", "remove", worktree["root"], cwd=worktree["repo"])
    if done.returncode != 0:
        raise PaoError(f"cannot remove worktree {worktree['root']}: {_failed(done)}")
