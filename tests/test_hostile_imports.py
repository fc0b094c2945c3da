"""Hostile memory against the real CLIs' context-file imports: no ``@`` form reaches a file.

A memory item carries every ``@`` form that Claude Code (it lexes the context file as
markdown and imports ``@path`` at the start of any text token) or Gemini CLI (``@path``
after whitespace) would follow, each pointing at a file of the folder: ``.env`` with a
password, and one decoy file per form. pao's own pipeline briefs and delivers into the
folder; then the pinned CLI answers one prompt in print mode against its loopback stub.
The briefing provably reached the model (its marker did), and no file's content did.
The unescaped forms are imported by the same CLIs (the control), so the probe can fail.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import attrs
import pytest

from pao_agents.spec import host_agents
from pao_core.plugins import load_config
from pao_core.contracts import MemoryBackend
from pao_agents.delivery import deliver
from pao_core.models import MemoryItem
from pao_core.gather import brief
from pao_core.plugins import build_plugins
from pao_testing.claude_cli import pinned_versions
from pao_testing.host_cases import CASES, HostCase, claude_case
from pao_testing.hostrun import fail_unless_loopback_only

pytestmark = pytest.mark.realcli
MARKER = "WOMBAT-4412"
PASSWORD = "hunter2-in-dot-env"
LONG = "y" * 90
FORMS = (
    "@{f}", "*@{f}*", "_@{f}_", "**@{f}**", "\\!@{f}", "\\*@{f}", "*x*@{f}", "[a](b)@{f}", "![i](j)@{f}",
    f"<span title='{LONG}'>@{{f}}", f"<!-- {LONG} -->@{{f}}", "<!-- c --> @{f}", "<b>@{f}</b>", "`x`@{f}",
    "\u00a0@{f}", "(@{f})", "x @./{f}", "~~x~~@{f}", "a\n@{f}",
)
HOSTS = [f"claude-code-{version}" for version in pinned_versions()] + ["gemini"]


def _case(host: str) -> HostCase:
    return claude_case(host.removeprefix("claude-code-")) if host.startswith("claude-code-") else CASES[host]


def _decoy(index: int) -> str:
    return f"DECOY-{index}-CONTENT"


def _hostile_folder(folder: Path) -> list[str]:
    """The folder's files an import would reach, and the memory lines that point at them."""
    (folder / ".env").write_text(f"DB_PASSWORD={PASSWORD}\n", encoding="utf-8")
    lines = ["@.env", "*@.env*", "_@.env_", "**@.env**"]
    for index, form in enumerate(FORMS):
        (folder / f"d{index}.txt").write_text(_decoy(index) + "\n", encoding="utf-8")
        lines.append(form.format(f=f"d{index}.txt"))
    return lines


def _prepare(host: str, tmp_path: Path) -> tuple[HostCase, Path, list[str]]:
    """The pinned CLI (run only in a loopback-only namespace) and a hostile git folder."""
    fail_unless_loopback_only()
    case = _case(host)
    assert case.binary is not None and case.binary.exists(), f"{case.binary} is missing: run scripts/setup --test"
    folder = tmp_path / "exporter"
    folder.mkdir()
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return case, folder, _hostile_folder(folder)


@attrs.frozen
class HostileBackend(MemoryBackend):
    lines: tuple[str, ...]
    name: str = "notes"

    def search(self, query: str, limit: int, deadline: float) -> list[MemoryItem]:
        text = f"The exporter notes ({MARKER}):\n" + "\n".join(self.lines)
        return [MemoryItem(backend=self.name, id="note:1", title="exporter", text=text, score=1.0, rank=1)]

    def health(self, deadline: float) -> str:
        return "one note"


def _run_print_mode(case: HostCase, home: Path, folder: Path, stub, user_env: dict[str, str]) -> str:
    """One prompt answered by the CLI in print mode; every string the stub received."""
    env = {"HOME": str(home), "PATH": os.environ["PATH"], "TERM": "xterm-256color", "LANG": "C.UTF-8", **user_env}
    command = [str(case.binary), "-p", "say hello"]
    result = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=180, check=False)
    sent = "\n".join(text for request in stub.requests if request.route.endswith(case.model_route)
                     for text in request.strings())
    assert sent, f"no {case.model_route} request (exit {result.returncode}): {result.stderr[-2000:]}"
    return sent


@pytest.mark.parametrize("host", HOSTS)
def test_no_import_form_of_memory_reaches_a_file(host: str, tmp_path: Path, isolated_home: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    case, folder, lines = _prepare(host, tmp_path)
    home = isolated_home / "user"
    monkeypatch.setenv(case.command_variable, str(case.binary))
    config, plugins = load_config(), build_plugins()
    profile = next(h for h in host_agents(plugins, config) if h.name == case.host)
    briefing = brief("tidy the exporter", folders=[str(folder)], config=config, plugins=plugins,
                     backends=[HostileBackend(tuple(lines))])
    assert "@" not in briefing.markdown
    briefing_file = str(folder / config.briefing.filename)
    deliver(briefing, folder, config=config, context_file=profile.context_file,
            context_block=profile.context_block(briefing_file, briefing.markdown))

    with case.make_stub() as stub:
        user_env = case.user_setup(home, stub)
        profile.preseed(str(folder))
        sent = _run_print_mode(case, home, folder, stub, user_env)
    assert MARKER in sent, "the briefing did not reach the model: the probe proves nothing"
    assert PASSWORD not in sent, ".env was imported"
    leaked = [FORMS[i] for i in range(len(FORMS)) if _decoy(i) in sent]
    assert not leaked, f"imported through: {leaked}"


@pytest.mark.parametrize("host", HOSTS)
def test_control_the_same_forms_unescaped_are_imported(host: str, tmp_path: Path, isolated_home: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Without pao's escaping the same CLI imports these forms: the probe above can fail."""
    case, folder, lines = _prepare(host, tmp_path)
    home = isolated_home / "user"
    context_file = "GEMINI.md" if case.host == "gemini" else "CLAUDE.md"
    (folder / context_file).write_text(f"# notes {MARKER}\n\n" + "\n\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setenv(case.command_variable, str(case.binary))
    config, plugins = load_config(), build_plugins()
    with case.make_stub() as stub:
        user_env = case.user_setup(home, stub)
        next(h for h in host_agents(plugins, config) if h.name == case.host).preseed(str(folder))
        sent = _run_print_mode(case, home, folder, stub, user_env)
    assert MARKER in sent
    assert PASSWORD in sent, "the plain @.env import was not followed: the CLI did not read the context file"
    imported = sum(_decoy(i) in sent for i in range(len(FORMS)))
    assert imported >= 3, imported
