"""Delivery: CONTEXT_BRIEFING.md and the CLAUDE.md import block, safely, idempotently, concurrently."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pao_core import hookimpl
from pao_core.briefing import verify
from pao_core.plugins import load_config
from pao_agents.delivery import BEGIN, END, DeliveryError, deliver, folder_lock_path, merge_block
from pao_core.files import state_lock
from pao_core.models import Briefing
from pao_core.plugins import get_plugins

BLOCK = "@CONTEXT_BRIEFING.md"

# User text: anything, as long as it does not itself contain pao's marker lines.
USER_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=300).filter(
    lambda t: "pao:briefing:" not in t
)


CLAUDE = {"context_file": "CLAUDE.md", "context_block": "@CONTEXT_BRIEFING.md"}
"""Claude Code's context file and block, as its profile writes them."""


def _block(body: str = BLOCK, newline: str = "\n") -> str:
    return newline.join([BEGIN, body, END]) + newline


def _assert_one_block(text: str, body: str = BLOCK) -> None:
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    assert _block(body, "\r\n") in text or _block(body, "\n") in text


@settings(max_examples=300)
@given(USER_TEXT)
def test_first_merge_appends_and_keeps_user_text(user: str) -> None:
    merged = merge_block(user, BLOCK)
    assert merged.startswith(user)
    _assert_one_block(merged)
    assert merge_block(merged, BLOCK) == merged


@settings(max_examples=300)
@given(USER_TEXT, USER_TEXT, st.sampled_from(["@OLD.md", "@CONTEXT_BRIEFING.md\nstale line", ""]),
       st.sampled_from(["\n", "\r\n"]))
def test_block_is_replaced_in_place(before: str, after: str, old_body: str, newline: str) -> None:
    # One line-ending style per file: the block follows it.
    before, after = (t.replace("\r", "").replace("\n", newline) for t in (before, after))
    head = before if not before or before.endswith(("\n", "\r")) else before + newline
    existing = head + newline.join([BEGIN, *old_body.splitlines(), END]) + newline + after
    merged = merge_block(existing, BLOCK)
    assert merged == head + _block(BLOCK, newline) + after
    assert merge_block(merged, BLOCK) == merged


@settings(max_examples=300)
@given(USER_TEXT, USER_TEXT, st.booleans())
def test_unterminated_block_from_a_crash_is_repaired(before: str, after: str, with_body: bool) -> None:
    head = before if not before or before.endswith(("\n", "\r")) else before + "\n"
    tail = after if not after.startswith(BLOCK) else "x" + after
    existing = head + BEGIN + "\n" + (BLOCK + "\n" if with_body else "") + tail
    merged = merge_block(existing, BLOCK)
    _assert_one_block(merged)
    assert merged.startswith(head) and merged.endswith(tail)
    assert merge_block(merged, BLOCK) == merged


def test_copied_extra_blocks_collapse_into_one() -> None:
    existing = f"intro\n{_block('@A.md')}middle\n{_block('@B.md')}end\n"
    assert merge_block(existing, BLOCK) == f"intro\n{_block()}middle\nend\n"


def _briefing(text: str = "# Context briefing\n\nhello\n") -> Briefing:
    from pao_core.briefing import footer

    markdown = text + footer(text, dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc))
    return Briefing(topic="t", markdown=markdown, items=(), backends={}, elapsed_ms=0.0)


def test_deliver_writes_both_files_and_keeps_user_text(tmp_path: Path) -> None:
    config = load_config()
    user = "# My project\n\nNever push to main.  \ttrailing spaces kept\n"
    (tmp_path / "CLAUDE.md").write_text(user)
    result = deliver(_briefing(), tmp_path, **CLAUDE, config=config)
    assert result.briefing_path.read_text() == _briefing().markdown
    assert verify(result.briefing_path.read_text())
    claude = (tmp_path / "CLAUDE.md").read_text()
    assert claude.startswith(user) and claude.count(BLOCK) == 1
    deliver(_briefing("# Context briefing\n\nsecond\n"), tmp_path, **CLAUDE, config=config)
    assert (tmp_path / "CLAUDE.md").read_text() == claude
    assert "second" in (tmp_path / "CONTEXT_BRIEFING.md").read_text()
    assert result.excluded_in_git is False


def test_host_profiles_choose_their_context_file_and_block(tmp_path: Path) -> None:
    deliver(_briefing(), tmp_path, config=load_config(), context_file="AGENTS.md",
            context_block="Read CONTEXT_BRIEFING.md before anything else.")
    assert "Read CONTEXT_BRIEFING.md before anything else." in (tmp_path / "AGENTS.md").read_text()
    assert not (tmp_path / "CLAUDE.md").exists()


@pytest.mark.parametrize("kind", ["symlink", "directory", "read-only", "briefing-symlink"])
def test_unsafe_targets_get_one_clear_error_and_nothing_written(tmp_path: Path, kind: str) -> None:
    folder = tmp_path / "agent"
    folder.mkdir()
    outside = tmp_path / "outside.md"
    outside.write_text("not yours\n")
    if kind == "symlink":
        (folder / "CLAUDE.md").symlink_to(outside)
    elif kind == "directory":
        (folder / "CLAUDE.md").mkdir()
    elif kind == "read-only":
        (folder / "CLAUDE.md").write_text("mine\n")
        os.chmod(folder / "CLAUDE.md", 0o444)
    else:
        (folder / "CONTEXT_BRIEFING.md").symlink_to(outside)
    before = sorted(p.name for p in folder.iterdir())
    with pytest.raises(DeliveryError) as info:
        deliver(_briefing(), folder, **CLAUDE, config=load_config())
    message = str(info.value)
    assert "\n" not in message and ("CLAUDE.md" in message or "CONTEXT_BRIEFING.md" in message)
    assert sorted(p.name for p in folder.iterdir()) == before
    assert outside.read_text() == "not yours\n"
    if kind == "read-only":
        assert (folder / "CLAUDE.md").read_text() == "mine\n"


def test_missing_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(DeliveryError, match="does not exist"):
        deliver(_briefing(), tmp_path / "nope", **CLAUDE, config=load_config())


def _git(*args: str, cwd: Path) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env).stdout


def test_git_work_tree_gets_an_exclude_entry_not_a_tracked_change(tmp_path: Path) -> None:
    assert shutil.which("git"), "git is part of the test environment"
    _git("init", "-q", cwd=tmp_path)
    (tmp_path / ".gitignore").write_text("*.log\n")
    _git("add", ".gitignore", cwd=tmp_path)
    _git("commit", "-qm", "init", cwd=tmp_path)
    sub = tmp_path / "pkg"
    sub.mkdir()
    for _ in range(2):
        result = deliver(_briefing(), sub, **CLAUDE, config=load_config())
    assert result.excluded_in_git
    exclude = (tmp_path / ".git" / "info" / "exclude").read_text()
    assert exclude.splitlines().count("CONTEXT_BRIEFING.md") == 1
    status = _git("status", "--porcelain", "--untracked-files=all", cwd=tmp_path)
    assert "CONTEXT_BRIEFING.md" not in status and "pkg/CLAUDE.md" in status
    assert (tmp_path / ".gitignore").read_text() == "*.log\n"


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []

    @hookimpl
    def pao_briefing_written(self, briefing, folder, path):
        self.calls.append((briefing.content_hash, folder, path))


@pytest.mark.hook("pao_briefing_written")
def test_briefing_written_fires_after_delivery(tmp_path: Path) -> None:
    plugins = get_plugins()
    recorder = Recorder()
    plugins.manager.register(recorder, name="recorder")
    try:
        briefing = _briefing()
        deliver(briefing, tmp_path, **CLAUDE, config=load_config(), plugins=plugins)
    finally:
        plugins.manager.unregister(recorder)
    assert recorder.calls == [(briefing.content_hash, str(tmp_path.resolve()),
                               str(tmp_path.resolve() / "CONTEXT_BRIEFING.md"))]
    assert (tmp_path / "CONTEXT_BRIEFING.md").exists()


WRITER = textwrap.dedent(
    """
    import datetime as dt, sys
    from pao_core.briefing import footer
    from pao_core.plugins import load_config
    from pao_agents.delivery import deliver
    from pao_core.models import Briefing
    folder, tag, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    config = load_config()
    for n in range(rounds):
        body = f"# Context briefing\\n\\n{tag} round {n}\\n" + ("filler line\\n" * 2000)
        markdown = body + footer(body, dt.datetime.now(dt.timezone.utc))
        deliver(Briefing(topic="t", markdown=markdown, items=(), backends={}, elapsed_ms=0.0), folder,
                config=config, context_file="CLAUDE.md", context_block=f"@CONTEXT_BRIEFING.md\\n<!-- from {tag} -->")
    """
)


def test_concurrent_deliveries_leave_one_block_and_a_complete_briefing(tmp_path: Path) -> None:
    folder = tmp_path / "agent"
    folder.mkdir()
    user = "user notes\n"
    (folder / "CLAUDE.md").write_text(user)
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(folder), tag, "40"], stderr=subprocess.PIPE, text=True)
        for tag in ("alpha", "beta")
    ]
    # While they run, read the pair under the delivery lock: it must always match.
    lock = folder_lock_path(load_config(), folder.resolve())
    checked = 0
    while any(proc.poll() is None for proc in procs):
        with state_lock(lock, timeout=30):
            if (folder / "CONTEXT_BRIEFING.md").exists():
                text = (folder / "CONTEXT_BRIEFING.md").read_text()
                tag = "alpha" if "alpha round" in text else "beta"
                assert f"<!-- from {tag} -->" in (folder / "CLAUDE.md").read_text()
                checked += 1
        time.sleep(0.02)  # leave the writers room to take the lock
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    assert checked > 0
    claude = (folder / "CLAUDE.md").read_text()
    briefing = (folder / "CONTEXT_BRIEFING.md").read_text()
    assert verify(briefing) and " round 39\n" in briefing
    # The block and the briefing file come from the same delivery (the lock's job).
    last = "alpha" if "alpha round" in briefing else "beta"
    assert claude == user + "\n" + _block(f"{BLOCK}\n<!-- from {last} -->")
    assert sorted(p.name for p in folder.iterdir()) == ["CLAUDE.md", "CONTEXT_BRIEFING.md"]
