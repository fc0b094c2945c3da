"""Replay of the labelled state snapshots recorded from the pinned CLIs: every one must read as its label.

Each ``data/states/<cli>-<version>/<case>.json`` was written by ``scripts/record_states.py`` from the real CLI
(its screen and the event log its hooks appended, untouched); no CLI starts here. The state is read as pao reads
an agent it watches: the newest event's, the screen filling in what events do not report
(:func:`pao_agents.states.agent_state`), the screen alone for an agent whose hooks are off.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pao_agents.agentdir import read_events
from pao_agents.readiness import ScreenReader
from pao_agents.spec import readiness_detectors
from pao_agents.states import agent_state
from pao_core.plugins import load_config
from pao_core.plugins import build_plugins

STATES = Path(__file__).parent / "data" / "states"
SNAPSHOTS = sorted(STATES.glob("*/*.json"))
HELDOUT = sorted(STATES.glob("heldout/*/*.json"))
"""Recorded from CLI versions pao was not pinned to (``PAO_HELDOUT_CLIS=... scripts/record_states.py``): replayed
alike, so what pao reads of them is checked in every run without installing them."""
CLASSES = {"ready", "busy", "waiting", "failed", "blocked"}
"""Recorded for every pinned CLI; ``blocked`` is its sign-in with no credentials set up (``blocked-login``: Codex's
sign-in choice, Gemini CLI's API-key dialog, Claude Code's question whether to use a key never approved)."""


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def readers():
    plugins = build_plugins()
    detectors = readiness_detectors(plugins, load_config())
    return lambda host: ScreenReader.for_host(host, detectors, plugins)


def replay(snapshot: dict, readers, tmp_path: Path, *, with_screen: bool = True):
    log, events = tmp_path / "events.jsonl", snapshot["events"]
    if snapshot.get("transcript"):  # the end of the transcript the Stop event named, as recorded
        (tmp_path / "transcript.jsonl").write_text(snapshot["transcript"]["tail"], encoding="utf-8")
        events = events.replace(json.dumps(snapshot["transcript"]["path"]), json.dumps(str(tmp_path / "transcript.jsonl")))
    log.write_text(events, encoding="utf-8")
    events = read_events(log) if snapshot["source"] == "hooks" else []
    seen = readers(snapshot["cli"]).classify(snapshot["screen"])
    return agent_state(events, (seen.state, seen.reason) if with_screen else None)


@pytest.mark.parametrize("path", SNAPSHOTS + HELDOUT, ids=lambda p: f"{p.parent.relative_to(STATES)}/{p.stem}")
def test_snapshot_reads_as_its_label(path: Path, readers, tmp_path: Path) -> None:
    snapshot = _load(path)
    verdict = replay(snapshot, readers, tmp_path)
    assert verdict is not None and verdict.state == snapshot["label"], (verdict, snapshot["screen"])
    if snapshot["reason"]:
        assert snapshot["reason"].lower() in (verdict.reason or "").lower(), verdict


def test_every_pinned_cli_covers_every_state_class() -> None:
    by_cli: dict[str, set[str]] = {}
    for path in SNAPSHOTS:
        by_cli.setdefault(path.parent.name, set()).add(_load(path)["label"])
    assert {name.rsplit("-", 1)[0] for name in by_cli} == {"claude-code", "codex", "gemini"}
    assert {name for name in by_cli if name.startswith("claude-code-")} == {"claude-code-2.0.77", "claude-code-2.1.332"}
    for name, labels in by_cli.items():
        assert labels == CLASSES, f"{name} has no snapshot of {sorted(CLASSES - labels)}"


def test_snapshots_were_recorded_not_written() -> None:
    for path in SNAPSHOTS + HELDOUT:
        snapshot = _load(path)
        assert snapshot["recorded"] == "scripts/record_states.py"
        assert snapshot["source"] in ("hooks", "screen")
        if snapshot["source"] == "hooks":  # the hook's own line format, as agentdir.append_command writes it
            assert all(line.startswith('{"event":{') and '"at":' in line for line in snapshot["events"].splitlines())


def test_hooks_alone_tell_a_turn_that_ended_in_an_api_error(readers, tmp_path: Path) -> None:
    """What ``pao list`` sees (no screen): Claude Code 2.1's StopFailure, 2.0's Stop with the transcript's API error,
    Gemini CLI's AfterAgent without a response with its chat's API error (not a finished turn)."""
    for name in ("claude-code-2.0.77", "claude-code-2.1.332", "gemini-0.61.0"):
        snapshot = _load(STATES / name / "failed-400.json")
        verdict = replay(snapshot, readers, tmp_path, with_screen=False)
        assert verdict is not None and verdict.state == "failed" and "invalid request" in verdict.reason, (name, verdict)


def test_hooks_and_the_transcript_alone_tell_claude_code_2_0_retrying(readers, tmp_path: Path) -> None:
    """Claude Code 2.0 logs each retried request in its transcript (no hook reports it): ``pao list`` says failed."""
    snapshot = _load(STATES / "claude-code-2.0.77" / "failed-refused.json")
    verdict = replay(snapshot, readers, tmp_path, with_screen=False)
    assert verdict is not None and verdict.state == "failed" and "retried (attempt" in verdict.reason


def test_hooks_alone_tell_what_gemini_asks(readers, tmp_path: Path) -> None:
    """Gemini CLI's ToolPermission notification, recorded with its hooks: the tool and its command, no screen read."""
    snapshot = _load(STATES / "gemini-0.61.0" / "waiting-permission.json")
    verdict = replay(snapshot, readers, tmp_path, with_screen=False)
    assert verdict == ("waiting", 'asks permission to use "Shell": "touch pao-stub-file"', "hooks"), verdict


def test_a_gemini_turn_is_failed_only_while_its_chat_s_newest_message_is_the_error(tmp_path: Path) -> None:
    """An API error of an earlier turn, answered since, says nothing of a turn that ended without text."""
    from pao_agents.states import event_verdict

    chat = tmp_path / "session.jsonl"
    error = {"id": "e", "timestamp": "2026-12-04T10:00:01.000Z", "type": "error", "content": "[API Error: quota]"}
    answered = {"$set": {"messages": [{"id": "u", "timestamp": "2026-12-04T10:00:05.000Z", "type": "user", "content": []},
                                      {"id": "g", "timestamp": "2026-12-04T10:00:06.000Z", "type": "gemini", "content": ""}]}}
    event = {"name": "AfterAgent", "at": 1.0, "event": {"hook_event_name": "AfterAgent", "transcript_path": str(chat),
                                                         "prompt_response": "[no response text]"}}
    chat.write_text(json.dumps(error) + "\n")
    assert event_verdict(event)[:2] == ("failed", 'API error: "[API Error: quota]"')
    error["content"] = '[API Error: {"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}]'
    chat.write_text(json.dumps(error) + "\n")
    assert event_verdict(event)[:2] == ("failed", 'API error: "429 RESOURCE_EXHAUSTED: Quota exceeded"')
    chat.write_text(json.dumps(error) + "\n" + json.dumps(answered) + "\n")
    assert event_verdict(event).state == "ready"
    chat.write_text(json.dumps(error) + "\n")
    said = {**event, "event": {**event["event"], "prompt_response": "Done."}}  # a turn with text is never read so
    assert event_verdict(said).state == "ready"
