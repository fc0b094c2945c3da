"""The Claude Code readiness detector against real screens recorded from each pinned CLI.

Goldens live in tests/data/screens/claude-code/<version>/<case>.txt and were captured
with ``tmux capture-pane`` by scripts/record-claude-screens (rerun it to refresh them).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pao_hosts.claude_screens import BLOCKERS, NBSP, ClaudeCodeScreens, input_text

SCREENS = Path(__file__).parent / "data" / "screens" / "claude-code"
VERSIONS = sorted(p.name for p in SCREENS.iterdir() if p.is_dir())

EXPECTED: dict[str, tuple[str | None, str | None]] = {
    # case: (state, a phrase of the reason)
    "ready": ("ready", None),
    "ready-typed": ("ready", None),
    "trust": ("waiting", "trust the folder"),
    "bypass-warning": ("blocked", "Bypass Permissions warning"),
    "api-key": ("blocked", "your consent"),
    "mcp-server": ("blocked", "mcp_approval"),
    "busy": ("busy", None),
    "waiting": ("waiting", None),
    "login": ("blocked", "not logged in"),
    "connection": ("failed", "retries a failed API request"),
    "root": ("blocked", "as root"),
    "no-conversation": ("blocked", "no conversation to resume"),
}
DIALOGS = ("trust", "bypass-warning", "api-key", "mcp-server", "waiting")
detector = ClaudeCodeScreens()


def golden(version: str, case: str) -> str:
    return (SCREENS / version / f"{case}.txt").read_text(encoding="utf-8")


def test_every_pinned_version_and_case_was_recorded() -> None:
    assert {"2.0.77", "2.1.332"} <= set(VERSIONS)
    for version in VERSIONS:
        recorded = {p.stem for p in (SCREENS / version).glob("*.txt")}
        assert set(EXPECTED) | {"ready-pasted-long"} <= recorded, version


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_golden_screen_classifies_as_expected(version: str, case: str) -> None:
    state, phrase = EXPECTED[case]
    verdict = detector.classify(golden(version, case))
    assert verdict is not None, f"{version}/{case}: no opinion"
    assert verdict.state == state, f"{version}/{case}: {verdict}"
    if phrase:
        assert phrase.lower() in (verdict.reason or "").lower()
        assert verdict.reason.count("\n") == 0  # one line for the user


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("case", DIALOGS)
def test_no_dialog_shows_an_input_box(version: str, case: str) -> None:
    screen = golden(version, case)
    assert "❯" in screen  # dialogs draw the same glyph ...
    assert input_text(screen) is None  # ... but never the input box


@pytest.mark.parametrize("version", VERSIONS)
def test_input_text_reads_what_is_typed(version: str) -> None:
    assert input_text(golden(version, "ready")) == ""
    assert input_text(golden(version, "ready-typed")) == "hello from pao"
    long_paste = input_text(golden(version, "ready-pasted-long"))
    assert long_paste is not None and ("[Pasted text #1" in long_paste or "line 1 of a long paste" in long_paste)


@pytest.mark.parametrize("version", VERSIONS)
def test_ready_needs_an_input_line_and_the_bypass_footer(version: str) -> None:
    screen = golden(version, "ready")
    assert detector.classify(screen.replace("❯" + NBSP, "❯ No, exit")) is None  # a choice, not an input
    assert detector.classify(screen.replace("bypass permissions on", "? for shortcuts")) is None
    assert ClaudeCodeScreens(footer="").classify(screen.replace("bypass permissions on", "auto mode on")).state == "ready"


@pytest.mark.parametrize("version", VERSIONS)
def test_ready_needs_rules_around_the_input(version: str) -> None:
    lines = golden(version, "ready").splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("❯" + NBSP))
    without_upper_rule = lines[: at - 1] + lines[at:]
    assert detector.classify("\n".join(without_upper_rule)) is None


@pytest.mark.parametrize("version", VERSIONS)
def test_a_conversation_quoting_a_dialog_is_still_ready(version: str) -> None:
    lines = golden(version, "ready").splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("❯" + NBSP)) - 1
    quoted = ["● The trust dialog says: Quick safety check, Do you trust the files, Bypass Permissions mode."]
    screen = "\n".join(lines[:at] + quoted + lines[at:])
    assert detector.classify(screen).state == "ready"


def test_blank_and_starting_screens_have_no_opinion() -> None:
    assert detector.classify("") is None
    assert detector.classify("\n" * 40) is None


# Screens pao must not produce here (they need the user's onboarding undone), written
# from the CLI's own strings, which the next test finds in the installed CLIs.
UNRECORDED = {
    "Choose the text style that looks best with your terminal": ("blocked", "first-run set-up"),
    "Select login method:": ("blocked", "first-run set-up"),
    "Unable to connect to Anthropic services": ("failed", "cannot reach the API"),
}


@pytest.mark.every_claude_pin("each pin's own texts: 2.0.x in cli.js, 2.1.x in the native binary")
def test_unrecorded_texts_are_the_installed_clis_own(claude_cli: Path) -> None:
    target = claude_cli.resolve()  # 2.0.x: cli.js; 2.1.x: the native binary
    content = target.read_bytes()
    for text in UNRECORDED:
        assert text.encode() in content, (target, text)


@pytest.mark.parametrize("text, expected", sorted(UNRECORDED.items()))
def test_unrecorded_blockers(text: str, expected: tuple[str, str]) -> None:
    verdict = detector.classify(f"\n\n {text}\n\n ❯ 1. Something\n")
    assert verdict.state == expected[0] and expected[1] in verdict.reason


def test_an_input_box_drawn_without_a_cursor_is_ready() -> None:
    """2.0.77 started with ``CI=1`` (recorded by hand): the glyph alone, no NO-BREAK SPACE after it."""
    screen = golden("2.0.77", "ready-ci")
    assert "❯" + NBSP not in screen
    assert detector.classify(screen).state == "ready" and input_text(screen) == ""


def test_a_1_0_style_prompt_is_ready() -> None:
    screen = "╭────────────────────────────╮\n│ >" + NBSP + 'Try "fix lint errors"     │\n╰────────────────────────────╯\n  ⏵⏵ bypass permissions on\n'
    assert detector.classify(screen).state == "ready"


def test_every_blocker_has_a_reason_that_says_what_to_do() -> None:
    for blocker in BLOCKERS:
        assert blocker.needles and len(blocker.reason) > 40 and "\n" not in blocker.reason
