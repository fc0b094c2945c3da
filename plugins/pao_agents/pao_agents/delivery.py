"""Step 4 of the pipeline: put the briefing where the host agent reads it on start-up.

``CONTEXT_BRIEFING.md`` is written atomically into the agent's folder, and the host's
context file (``CLAUDE.md`` for Claude Code) gets a marked block, the host profile's text
that makes the CLI read it (Claude Code's)::

    <!-- pao:briefing:begin (managed by pao; edits inside are replaced) -->
    @CONTEXT_BRIEFING.md
    <!-- pao:briefing:end -->

Re-delivery replaces the block in place; text outside it is never changed. Every
check runs before the first write, both files are replaced atomically, and one
lock per folder serialises concurrent deliveries. In a git work tree the briefing
file is listed in ``.git/info/exclude`` (never in a tracked file).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from pao_agents.spec.options import spawn_options
from pao_agents.spec.calls import host_agents
from pao_agents.safegit import git_binary, run_git
from pao_core.contracts import BriefingDeliverer
from pao_core.errors import PaoError
from pao_core.files import SymlinkRefused, atomic_write, ensure_dir, private_dir, state_lock
from pao_agents.jsonedit import lock_for, refuse_symlink
from pao_core.models import Delivery

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_core.models import Briefing
    from pao_core.plugins import Plugins

BEGIN = "<!-- pao:briefing:begin (managed by pao; edits inside are replaced) -->"
END = "<!-- pao:briefing:end -->"
_BEGIN_PREFIX = "<!-- pao:briefing:begin"


class DeliveryError(PaoError):
    """The briefing cannot be delivered into this folder; nothing was written."""


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _is_marker(line: str, marker: str) -> bool:
    return line.rstrip("\r\n").strip() == marker or (marker == BEGIN and line.strip().startswith(_BEGIN_PREFIX))


def merge_block(existing: str, block: str) -> str:
    """``existing`` with exactly one marked block holding ``block``; all other text kept.

    * no block yet: the block is appended (after a newline if the text lacks one);
    * a complete block: its lines are replaced in place;
    * an unterminated block (a begin marker and no end, say after an editor crash):
      the marker and the lines right after it that repeat the new block's lines are
      replaced; everything else stays, since pao cannot prove it wrote it.
    Extra complete blocks (copied by hand) are removed so the import appears once.
    """
    crlf = existing.count("\r\n")
    newline = "\r\n" if crlf > existing.count("\n") - crlf else "\n"
    body_lines = block.strip("\r\n").splitlines()
    new_block = newline.join([BEGIN, *body_lines, END]) + newline
    lines = _lines(existing)
    spans = _block_spans(lines)
    if not spans:
        orphan = next((i for i, line in enumerate(lines) if _is_marker(line, BEGIN)), None)
        if orphan is None:
            prefix = existing
            if prefix and not prefix.endswith(("\n", "\r")):
                prefix += newline
            if prefix.strip():
                prefix += "" if prefix.endswith(newline * 2) else newline
            return prefix + new_block
        end = orphan + 1
        for expected in body_lines:
            if end < len(lines) and lines[end].rstrip("\r\n") == expected:
                end += 1
            else:
                break
        spans = [(orphan, end)]
    first_start, first_end = spans[0]
    out = lines[:first_start] + [new_block]
    cursor = first_end
    for start, stop in spans[1:]:
        out += lines[cursor:start]
        cursor = stop
    out += lines[cursor:]
    return "".join(out)


def remove_block(existing: str) -> str:
    """``existing`` without pao's marked blocks (and the blank line ``merge_block`` put before one at the end)."""
    lines = _lines(existing)
    spans = _block_spans(lines)
    if not spans:
        return existing
    kept, cursor = [], 0
    for start, stop in spans:
        kept += lines[cursor:start]
        cursor = stop
    at_end = cursor == len(lines)
    kept += lines[cursor:]
    if at_end and len(kept) >= 2 and not kept[-1].strip() and kept[-2].endswith(("\n", "\r")):
        kept.pop()
    return "".join(kept)


def undeliver(folder: str | os.PathLike[str], briefing_file: str, context_file: str, config: PaoConfig, *, created: bool) -> None:
    """Take back what ``deliver`` wrote into ``folder``: the briefing file and the marked block (and the file, if pao created it)."""
    target = Path(folder)
    with state_lock(folder_lock_path(config, target.resolve()), timeout=30):
        Path(briefing_file).unlink(missing_ok=True)
        context = Path(context_file)
        try:
            existing = context.read_text(encoding="utf-8")
        except (FileNotFoundError, UnicodeDecodeError):
            return
        remaining = remove_block(existing)
        if created and not remaining.strip():
            context.unlink()
        elif remaining != existing:
            atomic_write(context, remaining)


def _block_spans(lines: list[str]) -> list[tuple[int, int]]:
    """``(begin, end + 1)`` line ranges of every complete marked block."""
    spans, start = [], None
    for index, line in enumerate(lines):
        if _is_marker(line, BEGIN):
            start = index
        elif start is not None and _is_marker(line, END):
            spans.append((start, index + 1))
            start = None
    return spans


def _check_target(path: Path, what: str) -> str | None:
    """Refuse what pao must not write through; return the current text (or ``None``)."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise DeliveryError(f"cannot inspect {path}: {exc.strerror}") from None
    if stat.S_ISLNK(info.st_mode):
        raise DeliveryError(f"{path} is a symbolic link; pao will not write the {what} through it")
    if stat.S_ISDIR(info.st_mode):
        raise DeliveryError(f"{path} is a folder, not a file; move it away to let pao write the {what}")
    if not stat.S_ISREG(info.st_mode):
        raise DeliveryError(f"{path} is not a regular file; pao will not write the {what} there")
    # Read-only bits are the owner's wish even where root could ignore them.
    if not info.st_mode & 0o222 or not os.access(path, os.W_OK):
        raise DeliveryError(f"{path} is not writable; make it writable to let pao write the {what}")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise DeliveryError(f"{path} is not UTF-8 text; pao will not rewrite it") from None
    except OSError as exc:
        raise DeliveryError(f"cannot read {path}: {exc.strerror}") from None


def _check_folder(folder: Path) -> Path:
    if not folder.exists():
        raise DeliveryError(f"{folder} does not exist")
    if not folder.is_dir():
        raise DeliveryError(f"{folder} is not a folder")
    resolved = folder.resolve()
    if not resolved.stat().st_mode & 0o222 or not os.access(resolved, os.W_OK | os.X_OK):
        raise DeliveryError(f"{folder} is not writable")
    return resolved


def git_exclude_path(folder: Path) -> Path | None:
    """``info/exclude`` of the git repository whose work tree holds ``folder``, if any."""
    git = git_binary()
    if git is None:
        return None
    try:
        result = run_git(git, str(folder), "rev-parse", "--is-inside-work-tree", "--git-path", "info/exclude", timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = result.stdout.splitlines()
    if result.returncode != 0 or len(lines) < 2 or lines[0] != "true":
        return None
    path = Path(lines[1])
    return path if path.is_absolute() else (folder / path)


def exclude_in_git(folder: Path, filename: str, exclude: Path | None = None) -> bool:
    """List ``filename`` in the repository's ``info/exclude``; False outside a work tree."""
    exclude = exclude or git_exclude_path(folder)
    if exclude is None:
        return False
    # No leading slash: the folder may be below the top level, and the name is distinctive.
    pattern = filename
    ensure_dir(exclude.parent)
    with state_lock(lock_for(exclude)):
        try:
            current = exclude.read_text(encoding="utf-8")
        except FileNotFoundError:
            current = ""
        if pattern in (line.strip() for line in current.splitlines()):
            return True
        separator = "" if not current or current.endswith("\n") else "\n"
        atomic_write(exclude, f"{current}{separator}{pattern}\n")
    return True


def folder_lock_path(config: PaoConfig, folder: Path) -> Path:
    """The lock every delivery into ``folder`` holds (kept under PAO_HOME, not in the folder).

    Hold it with :func:`pao_core.files.state_lock` to read the two files as one consistent pair.
    """
    key = hashlib.sha256(str(folder).encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return private_dir(config.home / "locks") / f"deliver-{key}.lock"


def deliver(
    briefing: Briefing,
    folder: str | os.PathLike[str],
    *,
    config: PaoConfig,
    context_file: str,
    context_block: str,
    plugins: Plugins | None = None,
) -> Delivery:
    """Write the briefing file and the context file's marked block into ``folder``.

    ``context_file`` and ``context_block`` (the text inside the block) are the host
    profile's (``HostAgent.context_file``, ``HostAgent.context_block``). Raises
    :class:`DeliveryError` with one line, having written nothing, when the folder or
    either file cannot be written safely. Fires ``pao_briefing_written`` afterwards.
    """
    target = _check_folder(Path(folder))
    name = config.briefing.filename
    for label, value in (("briefing file", name), ("context file", context_file)):
        if not value or Path(value).name != value or value in (".", ".."):
            raise DeliveryError(f"the {label} name {value!r} must be a plain file name")
    briefing_path = target / name
    context_path = target / context_file
    exclude = git_exclude_path(target)
    if exclude is not None:
        try:
            refuse_symlink(exclude)
        except SymlinkRefused as exc:
            raise DeliveryError(str(exc)) from None
    with state_lock(folder_lock_path(config, target), timeout=30):
        previous_briefing = _check_target(briefing_path, "briefing")
        existing = _check_target(context_path, "context file")
        merged = merge_block(existing or "", context_block)
        try:
            atomic_write(briefing_path, briefing.markdown)
        except OSError as exc:
            raise DeliveryError(f"cannot write {briefing_path}: {exc.strerror}") from None
        if merged != existing:
            try:
                atomic_write(context_path, merged)
            except OSError as exc:
                _restore(briefing_path, previous_briefing)
                raise DeliveryError(f"cannot write {context_path}: {exc.strerror}") from None
    excluded = exclude is not None and exclude_in_git(target, name, exclude)  # outside a work tree: git is not asked twice
    delivery = Delivery(target, briefing_path, context_path, excluded)
    if plugins is None:
        from pao_core.plugins import get_plugins  # pluggy, entry points: loaded on use

        plugins = get_plugins()
    plugins.briefing_written(briefing, str(target), str(briefing_path))
    return delivery


def _restore(path: Path, previous: str | None) -> None:
    """Put the briefing file back as it was after the context file could not be written."""
    with contextlib.suppress(OSError):
        if previous is None:
            path.unlink(missing_ok=True)
        else:
            atomic_write(path, previous)


@attrs.frozen
class HostDelivery(BriefingDeliverer):
    """``pao brief --write``: into the context file of the default host, as its spawn would."""

    config: PaoConfig
    plugins: Plugins
    name: str = "host-context-file"

    def deliver(self, briefing: Briefing, folder: str) -> Delivery:
        hosts = host_agents(self.plugins, self.config)
        wanted = spawn_options(self.config).host or (hosts[0].name if hosts else "")
        host = next((h for h in hosts if h.name == wanted), None)
        if host is None:
            raise DeliveryError(f"brief --write: the default host {wanted!r} is not installed" if wanted
                                else "brief --write: no host agent is installed")
        block = host.context_block(self.config.briefing.filename, briefing.markdown)
        return deliver(briefing, folder, config=self.config, context_file=host.context_file, context_block=block,
                       plugins=self.plugins)
