"""``pao spawn --worktree``: an agent in a git worktree of its own, on branch ``pao/NAME``.

The worktree lives under ``$PAO_HOME/worktrees/NAME`` (never inside the user's
folder), and remembers its base: the branch (``base``) and commit (``base_commit``) it
started from. ``pao kill --clean`` removes it when nothing in it is uncommitted, and its
branch when the agent committed nothing; ``pao diff`` shows its changes against the base;
``pao finish`` merges the branch into the base (docs/lifecycle.md).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from pao_agents.safegit import git_binary, repository_programs, run_git
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
    base = _git("symbolic-ref", "--quiet", "--short", "HEAD", cwd=root).stdout.strip()  # empty: a detached HEAD
    done = _git("worktree", "add", "-b", branch, str(path), "HEAD", cwd=root)
    if done.returncode != 0:
        raise PaoError(f"--worktree: git worktree add failed: {_failed(done)}")
    base_commit = _git("rev-parse", "--verify", "--quiet", f"{branch}^{{commit}}", cwd=root).stdout.strip()
    agent_folder = path if inside == "." else path / inside
    return {"path": str(agent_folder), "root": str(path), "repo": root, "branch": branch, "base": base,
            "base_commit": base_commit}


def uncommitted(worktree: dict[str, str]) -> list[str]:
    """The worktree's uncommitted changes (``git status --porcelain`` lines); empty when clean or gone."""
    if not os.path.isdir(worktree["root"]):
        return []
    done = _git("status", "--porcelain", "--untracked-files=all", cwd=worktree["root"])
    if done.returncode != 0:
        raise PaoError(f"cannot read the state of worktree {worktree['root']}: {_failed(done)}")
    return done.stdout.splitlines()


def remove_worktree(worktree: dict[str, str], *, discard: bool = False) -> None:
    """Remove a clean worktree (git refuses a dirty one, unless ``discard``); its branch ``pao/NAME`` stays."""
    if not os.path.isdir(worktree["root"]):
        _git("worktree", "prune", cwd=worktree["repo"])
        return
    done = _git("worktree", "remove", *(["--force"] if discard else []), worktree["root"], cwd=worktree["repo"])
    if done.returncode != 0:
        raise PaoError(f"cannot remove worktree {worktree['root']}: {_failed(done)}")


def base_commit(worktree: dict[str, str]) -> str:
    """The commit the worktree started from (a worktree from before pao kept it: where its branch meets the base)."""
    if worktree.get("base_commit"):
        return worktree["base_commit"]
    done = _git("merge-base", worktree["branch"], worktree.get("base") or "HEAD", cwd=worktree["repo"])
    if done.returncode != 0:
        raise PaoError(f"cannot tell where branch {worktree['branch']} started: {_failed(done)}")
    return done.stdout.strip()


def commits_beyond_base(worktree: dict[str, str]) -> int:
    """How many commits the agent's branch has that its base commit has not (a branch that is gone has none)."""
    done = _git("rev-list", "--count", f"{base_commit(worktree)}..refs/heads/{worktree['branch']}", cwd=worktree["repo"])
    if done.returncode != 0:
        if _git("rev-parse", "--verify", "--quiet", f"refs/heads/{worktree['branch']}", cwd=worktree["repo"]).returncode:
            return 0
        raise PaoError(f"cannot count the commits of branch {worktree['branch']}: {_failed(done)}")
    return int(done.stdout.strip() or 0)


def delete_branch(worktree: dict[str, str]) -> str | None:
    """``git branch -d`` (never ``-D``) the agent's branch: ``None`` when it is gone, else why git kept it."""
    done = _git("branch", "-d", worktree["branch"], cwd=worktree["repo"])
    return None if done.returncode == 0 else _failed(done)


def tidy_branch(worktree: dict[str, str]) -> str:
    """After ``kill --clean``: the branch goes when the agent committed nothing on it; what became of it, in words."""
    ahead = commits_beyond_base(worktree)
    if ahead:
        return f"branch {worktree['branch']} kept: {ahead} commit(s) beyond its base"
    kept = delete_branch(worktree)
    return f"branch {worktree['branch']} deleted (no commits)" if kept is None else f"branch {worktree['branch']} kept: {kept}"


def changes(worktree: dict[str, str]) -> str:
    """The worktree's changes against its base commit: committed and uncommitted (tracked), then each untracked file."""
    root, base = worktree["root"], base_commit(worktree)
    if not os.path.isdir(root):
        raise ValidationError(f"the worktree {root} is gone")
    done = _git("diff", "--no-color", "--no-ext-diff", "--no-textconv", base, "--", cwd=root)
    if done.returncode != 0:
        raise PaoError(f"git diff failed in {root}: {_failed(done)}")
    parts = [done.stdout]
    listed = _git("ls-files", "--others", "--exclude-standard", "-z", cwd=root)
    for path in filter(None, listed.stdout.split("\0")):
        added = _git("diff", "--no-color", "--no-ext-diff", "--no-textconv", "--no-index", "--", os.devnull, path, cwd=root)
        parts.append(added.stdout)  # exit 1 means "they differ": it always does
    return "".join(parts)


class MergeConflict(PaoError):
    """The branch does not merge cleanly into its base: the merge was undone, nothing changed."""


def merge_into_base(worktree: dict[str, str]) -> str:
    """Merge the agent's branch into its base branch, which must be checked out, clean, in the repository's folder.

    A conflict is undone (``git merge --abort``), so the base, the branch and the worktree are as they were.
    Returns the base branch's new commit.
    """
    repo, base, branch = worktree["repo"], worktree.get("base"), worktree["branch"]
    if not base:
        raise ValidationError(f"the worktree started from a detached HEAD: there is no base branch to merge "
                              f"{branch} into (merge it yourself, or 'pao finish --keep')")
    current = _git("symbolic-ref", "--quiet", "--short", "HEAD", cwd=repo).stdout.strip()
    if current != base:
        raise ValidationError(f"{repo} has {current or 'a detached HEAD'} checked out, not {base}: check out {base} "
                              "there first (nothing was changed)")
    dirty = _git("status", "--porcelain", "--untracked-files=no", cwd=repo).stdout.splitlines()
    if dirty:
        raise ValidationError(f"{repo} has {len(dirty)} uncommitted change(s) on {base}: commit or stash them first "
                              "(nothing was changed)")
    done = _git("merge", "--no-edit", "--no-stat", branch, cwd=repo)
    if done.returncode != 0:
        conflicted = _git("diff", "--name-only", "--diff-filter=U", cwd=repo).stdout.split()
        _git("merge", "--abort", cwd=repo)
        if not conflicted:
            drivers = [key for key in repository_programs(git_binary() or "git", repo) if key.startswith("merge.")]
            why = (f"the repository's own merge driver ({', '.join(drivers)}) was not run: pao runs no program of "
                   "the repository's; merge it yourself" if drivers else _failed(done))
            raise PaoError(f"git merge of {branch} into {base} failed: {why} (nothing was changed)")
        raise MergeConflict(f"{branch} does not merge cleanly into {base} (conflicts in {', '.join(conflicted[:5])}); "
                            "the merge was undone: the branch, the worktree and the agent are as they were")
    return _git("rev-parse", "HEAD", cwd=repo).stdout.strip()
