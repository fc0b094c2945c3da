"""Reading Claude Code's screen: ready, busy, waiting on a menu, or blocked by a dialog.

Ready is the input box: a line starting with ``❯`` and a NO-BREAK SPACE (U+00A0, not
an ASCII space; 1.0.x shows ``>`` instead; 2.0.x with ``CI`` set draws the glyph
alone) with a ``─`` rule right above it and
another below it, plus the footer ``bypass permissions on`` when pao started the
agent in bypass mode. Dialogs also draw ``❯`` (``❯ 1. Yes``, ``❯ No, exit``), but
with an ASCII space and never between two rules, so the glyph alone proves nothing.
Dialog texts count only while no input box is shown, so a conversation that quotes
them does not block the agent. An exited agent is the terminal's to recognise (pao-tmux
contributes a detector for its ``Pane is dead`` line); a blocker's text still says why.
"""

from __future__ import annotations

import re
from typing import Sequence

import attrs

from pao_agents.spec import ReadinessDetector
from pao_agents.spec import ScreenVerdict, quoted

NBSP = "\u00a0"
_RULE = re.compile(r"─{8,}")
_INPUT = re.compile(r"^[│\s]{0,3}[❯>](?:" + NBSP + r"(?P<text>.*?))?[\s│]*$")
_NUMBERED_CHOICE = re.compile(r"^[│\s]*❯[ \u00a0]+\d+\.\s", re.MULTILINE)
_RETRYING = re.compile(r"(?:^\s*⎿.*\n)?^.*\bretrying in \d+.*$", re.MULTILINE | re.IGNORECASE)
"""2.1: ``✻ Connection refused ... · retrying in 1s · attempt 2/10``; 2.0: ``⎿  Unable to connect to API
(ECONNREFUSED)`` with ``Retrying in 3 seconds… (attempt 4/10)`` below it (both lines quoted)."""
_OUTPUT = re.compile(r"^\s*(?:[●⎿]|[>❯] \S)")
"""A line the conversation starts an entry with: the assistant's ``●``, a result's ``⎿``, the user's prompt."""

ASK_USER_TO_RUN = "run `claude` once yourself in that folder, answer it, then spawn again"


@attrs.frozen
class Blocker:
    """Texts that mean the agent cannot go on by itself, and what the user should do."""

    key: str
    needles: tuple[str, ...]
    reason: str
    dialog: bool = True  # only while no input box is shown
    state: str = "blocked"


BLOCKERS: tuple[Blocker, ...] = (
    Blocker(
        "root",
        ("cannot be used with root/sudo privileges",),
        "Claude Code refuses --dangerously-skip-permissions as root: run pao as a normal user, set IS_SANDBOX=1 "
        "if this machine is a disposable sandbox, or set [hosts.claude-code] permission_mode to another mode",
        dialog=False,
    ),
    Blocker(
        "no-conversation",
        ("No conversation found",),
        "Claude Code found no conversation to resume (its transcript is gone): start a new agent with pao spawn",
        dialog=False,
    ),
    Blocker(
        "trust",
        ("Quick safety check", "Yes, I trust this folder", "Do you trust the files"),
        "Claude Code asks whether to trust the folder: answer the dialog yourself, or `pao trust DIR` first; if pao "
        "pre-seeded it, check ~/.claude.json is writable and CLAUDE_CONFIG_DIR is the same for pao and the agent",
        state="waiting",  # a question the user answers, as a permission prompt is: not something to fix
    ),
    Blocker(
        "api-key",
        ("Do you want to use this API key?",),
        "Claude Code asks whether to use ANTHROPIC_API_KEY; that is your consent to give, pao does not: "
        + ASK_USER_TO_RUN,
    ),
    Blocker(
        "bypass-warning",
        ("Bypass Permissions mode",),
        "Claude Code shows the Bypass Permissions warning although pao pre-seeded its acceptance: check "
        "~/.claude/settings.json and ~/.claude.json are writable, or set [hosts.claude-code] permission_mode",
    ),
    Blocker(
        "mcp-server",
        ("New MCP server found",),
        "Claude Code asks to approve an MCP server of the folder's .mcp.json: set [hosts.claude-code] "
        'mcp_approval = "folder" (or "all"), or approve it in the agent\'s terminal',
    ),
    Blocker(
        "onboarding",
        ("Choose the text style", "Select login method"),
        "Claude Code's first-run set-up (theme, login) is not done: " + ASK_USER_TO_RUN,
    ),
    Blocker(
        "login",
        ("Please run /login", "Run /login", "Missing API key"),
        "Claude Code is not logged in: run `claude` and /login once yourself, or set ANTHROPIC_API_KEY",
        dialog=False,
    ),
    Blocker(
        "connection",
        ("Unable to connect to Anthropic services", "Unable to connect to API", "(ECONNREFUSED)"),
        "Claude Code cannot reach the API (it keeps retrying): check the network, proxy and ANTHROPIC_BASE_URL",
        dialog=False,
        state="failed",
    ),
)


def input_box(screen: str) -> tuple[int, str] | None:
    """The input box's first line index and the text typed into it, or ``None`` when none is shown."""
    lines = screen.splitlines()
    for index, line in enumerate(lines):
        match = _INPUT.match(line)
        if not match or index == 0 or not _RULE.search(lines[index - 1]):
            continue
        # A multi-line input continues until the lower rule.
        for below in lines[index + 1 :]:
            if _RULE.search(below):
                return index, match.group("text") or ""
    return None


def api_error(screen: str, box: tuple[int, str] | None) -> str | None:
    """The conversation's newest entry above the input box when it is an API error (the turn ended in it)."""
    lines = screen.splitlines()[: box[0]] if box is not None else []
    entries = [line.strip() for line in lines if _OUTPUT.match(line)]
    newest = entries[-1] if entries else ""
    return newest.lstrip("●⎿ ") if "API Error" in newest else None


def input_text(screen: str) -> str | None:
    """What is typed in the input box (``""`` when empty), or ``None`` when no input box is shown."""
    box = input_box(screen)
    return None if box is None else box[1]


@attrs.frozen
class ClaudeCodeScreens(ReadinessDetector):
    """The readiness detector for Claude Code (every version pao was measured on).

    ``footer`` is the mode line the ready screen must show (``bypass permissions on``
    when pao starts agents in bypass mode); empty to accept any.
    """

    footer: str = "bypass permissions on"
    name: str = "claude-code-screens"
    hosts: Sequence[str] = ("claude-code",)

    def classify(self, screen: str) -> ScreenVerdict | None:
        box = input_box(screen)
        retrying = _RETRYING.search(screen)
        if retrying:  # the spinner still says "esc to interrupt": the request failed and waits to be sent again
            return ScreenVerdict("failed", "Claude Code retries a failed API request: " + quoted(retrying.group()), self.name)
        for blocker in BLOCKERS:
            if blocker.dialog and box is not None:
                continue
            if any(needle in screen for needle in blocker.needles):
                return ScreenVerdict(blocker.state, blocker.reason, self.name)  # even if it exited: say why
        if _NUMBERED_CHOICE.search(screen):
            return ScreenVerdict("waiting", "Claude Code waits for a choice in a menu", self.name)
        if "esc to interrupt" in screen:
            return ScreenVerdict("busy", None, self.name)
        error = api_error(screen, box)
        if error is not None:
            return ScreenVerdict("failed", "Claude Code's turn ended in an API error: " + quoted(error), self.name)
        if box is not None:
            if self.footer and self.footer not in "\n".join(screen.splitlines()[box[0] :]):
                return None  # the footer renders a moment after the box; not ready yet
            return ScreenVerdict("ready", None, self.name)
        return None
