"""The end of an agent's day against real git and real tmux: kill several or all, kill --clean, diff, finish."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import time
from pathlib import Path

import pytest

from pao_testing.lifecycle.fixtures import Pao, pao  # noqa: F401  (fixture)
from pao_agents.registry import JsonRegistry
from pao_agents.spec import AgentRecord


@pytest.fixture
def repo(pao: Pao, monkeypatch: pytest.MonkeyPatch) -> Path:
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Sam")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "sam@example.org")
    path = pao.folder("project")
    _git(path, "init", "-q", "-b", "main")
    (path / "app.py").write_text("print('one')\n")
    (path / "notes.txt").write_text("notes\n")
    (path / ".gitignore").write_text(".fake-agent/\nCONTEXT_BRIEFING.md\nAGENTS.md\n")  # the fake CLI's own files
    _git(path, "add", "-A")
    _git(path, "commit", "-qm", "start")
    return path


def _git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, check=True).stdout


def _branches(repo: Path) -> list[str]:
    return _git(repo, "branch", "--format=%(refname:short)").split()


def _spawn_in_worktree(pao: Pao, repo: Path, name: str) -> dict:
    code, out, err = pao("spawn", f"work on {name}", "--folder", str(repo), "--name", name, "--worktree", "--no-nudge", "--no-mcp",
                         "--json")
    assert code == 0, err
    return json.loads(out)["extra"]["worktree"]


def _commit_in(worktree: dict, file: str, text: str) -> None:
    Path(worktree["root"], file).write_text(text)
    _git(Path(worktree["root"]), "add", "-A")
    _git(Path(worktree["root"]), "commit", "-qm", f"change {file}")


def _finish_after_the_user_s_change(pao: Pao, repo: Path, app: str) -> tuple[str, int, str]:
    """The user commits ``app`` as app.py on the base, then runs ``pao finish api``: the base's head, the exit
    code and stderr."""
    (repo / "app.py").write_text(app)
    _git(repo, "commit", "-qam", "the user's change")
    head = _git(repo, "rev-parse", "HEAD")
    code, _, err = pao("finish", "api")
    return head, code, err


def test_kill_ends_several_agents_at_once_and_all_of_them(pao: Pao) -> None:
    for name in ("a", "b", "c", "d"):
        assert pao("spawn", "x", "--folder", str(pao.folder(name)), "--name", name, "--no-nudge", "--no-mcp")[0] == 0
    code, _, err = pao("kill", "a", "ghost")
    assert code == 1 and err.strip() == "pao: no agent named 'ghost' (see 'pao list')"
    assert len(JsonRegistry(pao.home).list()) == 4  # nothing ended before every name was known
    started = time.monotonic()
    code, out, err = pao("kill", "a", "b", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["failed"] == [] and set(result["results"]) == {"a", "b"} and result["results"]["a"]["killed"]
    assert time.monotonic() - started < 3.0
    code, _, err = pao("kill", "--all")
    assert code == 0 and "killed c" in err and "killed d" in err
    assert JsonRegistry(pao.home).list() == [] and pao.tmux("list-windows", "-a").stdout.count("\n") <= 1
    assert pao("kill", "--all")[0] == 1
    assert pao("kill", "--machine", "m", "x")[0] == 2
    assert pao("kill")[0] == 2


def test_kill_reports_each_agent_and_fails_when_one_failed(pao: Pao) -> None:
    assert pao("spawn", "x", "--folder", str(pao.folder("ok")), "--name", "ok", "--no-nudge", "--no-mcp")[0] == 0
    JsonRegistry(pao.home).add(AgentRecord(name="mac", folder=str(pao.folder("mac")), topic="t", host="fake",
                                           terminal="terminalapp-uninstalled", target="window 4/tab 1",
                                           created_at=dt.datetime.now(dt.timezone.utc)))
    code, _, err = pao("kill", "--all")
    assert code == 1
    assert "pao: killed ok" in err and "pao: mac: unknown terminal" in err
    assert err.strip().splitlines()[-1] == "pao: kill failed for 1 of 2 agents: mac"
    assert [r.name for r in JsonRegistry(pao.home).list()] == ["mac"]


def test_kill_clean_deletes_a_branch_without_commits_and_keeps_one_with_commits(pao: Pao, repo: Path) -> None:
    empty, busy = _spawn_in_worktree(pao, repo, "empty"), _spawn_in_worktree(pao, repo, "busy")
    assert empty["base"] == "main" and empty["base_commit"] == _git(repo, "rev-parse", "HEAD").strip()
    _commit_in(busy, "app.py", "print('two')\n")
    code, out, err = pao("kill", "empty", "--clean", "--json")
    assert code == 0, err
    assert json.loads(out)["branch"] == "branch pao/empty deleted (no commits)"
    code, _, err = pao("kill", "busy", "--clean")
    assert code == 0 and "branch pao/busy kept: 1 commit(s) beyond its base" in err
    assert _branches(repo) == ["main", "pao/busy"]
    assert not Path(empty["root"]).exists() and not Path(busy["root"]).exists()


def test_diff_shows_committed_uncommitted_and_new_files_against_the_base(pao: Pao, repo: Path) -> None:
    worktree = _spawn_in_worktree(pao, repo, "api")
    _commit_in(worktree, "app.py", "print('two')\n")
    Path(worktree["root"], "notes.txt").write_text("notes\nmore \x1b]0;owned\x07notes\n")
    Path(worktree["root"], "new.md").write_text("# new\n")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "main moved on")  # the base branch moving changes nothing
    code, out, err = pao("diff", "api")
    assert code == 0, err
    assert "-print('one')\n+print('two')" in out and "+more notes" in out and "+# new" in out
    assert "\x1b" not in out and "\x07" not in out
    assert "main moved on" not in out
    data = json.loads(pao("diff", "api", "--json")[1])
    assert data["base"] == "main" and data["diff"] == out
    Path(worktree["root"], "notes.txt").write_text("notes\n")
    Path(worktree["root"], "new.md").unlink()
    _git(Path(worktree["root"]), "reset", "-q", "--hard", data["base_commit"])
    code, out, err = pao("diff", "api")
    assert (code, out) == (0, "") and "api has no changes against main" in err
    assert pao("spawn", "x", "--folder", str(pao.folder("plain")), "--name", "plain", "--no-nudge", "--no-mcp")[0] == 0
    code, _, err = pao("diff", "plain")
    assert code == 2 and "has no worktree of its own" in err


def test_finish_merges_the_branch_removes_the_worktree_and_ends_the_agent(pao: Pao, repo: Path) -> None:
    worktree = _spawn_in_worktree(pao, repo, "api")
    _commit_in(worktree, "app.py", "print('two')\n")
    code, out, err = pao("finish", "api", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["commits"] == 1 and result["branch"] == "deleted"
    assert result["merged"] == _git(repo, "rev-parse", "HEAD").strip()
    assert (repo / "app.py").read_text() == "print('two')\n"
    assert _branches(repo) == ["main"] and not Path(worktree["root"]).exists()
    assert JsonRegistry(pao.home).list() == [] and pao.tmux("list-windows", "-a").stdout.count("\n") <= 1


def test_finish_refuses_uncommitted_changes_unless_discarded_and_keeps_on_request(pao: Pao, repo: Path) -> None:
    worktree = _spawn_in_worktree(pao, repo, "api")
    _commit_in(worktree, "app.py", "print('two')\n")
    Path(worktree["root"], "notes.txt").write_text("unsaved\n")
    code, _, err = pao("finish", "api")
    assert code == 2 and f"pao: the worktree of agent 'api', {worktree['root']}, has 1 uncommitted change(s)" in err
    assert "--discard" in err
    assert Path(worktree["root"], "notes.txt").read_text() == "unsaved\n" and len(JsonRegistry(pao.home).list()) == 1
    code, _, err = pao("finish", "api", "--keep", "--discard")
    assert code == 0 and "kept pao/api" in err and "1 uncommitted change(s) discarded" in err
    assert _branches(repo) == ["main", "pao/api"] and (repo / "app.py").read_text() == "print('one')\n"
    assert not Path(worktree["root"]).exists()


def test_a_merge_conflict_leaves_everything_as_it_was(pao: Pao, repo: Path) -> None:
    worktree = _spawn_in_worktree(pao, repo, "api")
    _commit_in(worktree, "app.py", "print('agent')\n")
    head, code, err = _finish_after_the_user_s_change(pao, repo, "print('user')\n")
    assert code == 1 and err.count("\n") == 1
    assert "pao/api does not merge cleanly into main (conflicts in app.py); the merge was undone" in err
    assert _git(repo, "rev-parse", "HEAD") == head and _git(repo, "status", "--porcelain") == ""
    assert (repo / "app.py").read_text() == "print('user')\n"
    assert Path(worktree["root"], "app.py").read_text() == "print('agent')\n"
    assert [r.state for r in JsonRegistry(pao.home).list()] == ["ready"]


def test_finish_never_runs_the_repository_s_own_merge_driver(pao: Pao, repo: Path, tmp_path: Path) -> None:
    """A copied repository's ``.git/config`` may name a merge driver (a program) that its ``.gitattributes``
    assigns to every file: the merge ``pao finish`` runs starts no such program; it fails, is undone and said."""
    marker = tmp_path / "driver-ran"
    (repo / "app.py").write_text("one\ntwo\nthree\nfour\nfive\n")
    (repo / ".gitattributes").write_text("* merge=theirs-tool\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "a longer file and its merge attribute")
    _git(repo, "config", "merge.theirs-tool.driver", f"touch {marker}; cp %B %A")
    worktree = _spawn_in_worktree(pao, repo, "api")
    _commit_in(worktree, "app.py", "one\ntwo\nthree\nfour\nFIVE\n")
    head, code, err = _finish_after_the_user_s_change(pao, repo, "ONE\ntwo\nthree\nfour\nfive\n")
    assert not marker.exists(), "the repository's merge driver ran"
    assert code == 1 and err.count("\n") == 1 and "(nothing was changed)" in err
    assert "the repository's own merge driver (merge.theirs-tool.driver) was not run" in err
    assert _git(repo, "rev-parse", "HEAD") == head and _git(repo, "status", "--porcelain") == ""
    assert Path(worktree["root"], "app.py").read_text() == "one\ntwo\nthree\nfour\nFIVE\n"
