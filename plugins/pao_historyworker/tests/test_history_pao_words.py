"""pao's own first prompt (the hosts' ``nudge``: "Your task: ... then start.") is never indexed as history: a real
Claude Code transcript whose first prompt is that text, as each host profile words it, keeps the agent's replies and
loses pao's words. The prompts come from the host profiles themselves, so a change of wording breaks this test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pao_agents.spec import SpawnRequest
from pao_historyworker.transcripts import read_exchanges
from pao_hosts.claude_code import ClaudeCode
from pao_hosts.common import nudge_text

REAL = (Path(__file__).resolve().parents[3] / "tests" / "data" / "eval" / "transcripts" / "-Users-sam-code-beacon"
        / "922e7339-c8f4-41a9-917a-6d30722b0a90.jsonl")
TOPIC = "beacon error rate jumped today: apns BadDeviceToken"


def pao_prompts() -> list[str]:
    prompts = []
    for agent_dir in ("/home/sam/.local/share/pao/agents/beacon", None):
        request = SpawnRequest(TOPIC, "/Users/sam/code/beacon", "beacon", "claude-code", agent_dir=agent_dir)
        prompts.append(ClaudeCode.nudge(None, request, "/Users/sam/code/beacon/CONTEXT_BRIEFING.md"))  # type: ignore[arg-type]
        prompts.append(nudge_text(request, "/Users/sam/code/beacon/CONTEXT_BRIEFING.md"))
    return prompts


def with_first_prompt(tmp_path: Path, prompt: str) -> Path:
    lines = REAL.read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if json.loads(line).get("type") == "user")
    record = json.loads(lines[first])
    record["message"]["content"] = prompt
    lines[first] = json.dumps(record)
    path = tmp_path / REAL.name
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("index", range(4))
def test_pao_first_prompt_is_not_indexed_but_the_reply_is(tmp_path: Path, index: int) -> None:
    prompt = pao_prompts()[index]
    assert prompt.startswith("Your task: ") and TOPIC in prompt
    original = read_exchanges(REAL).exchanges
    changed = read_exchanges(with_first_prompt(tmp_path, prompt)).exchanges
    assert len(changed) == len(original)
    assert changed[0].prompt == "" and changed[0].reply == original[0].reply and changed[0].reply
    assert not any("Your task" in exchange.prompt or "pao's briefing" in exchange.prompt for exchange in changed)
    assert [e.prompt for e in changed[1:]] == [e.prompt for e in original[1:]]


def test_a_prompt_the_user_typed_that_starts_alike_is_kept(tmp_path: Path) -> None:
    typed = "Your task: fix the apns errors. Then start."
    changed = read_exchanges(with_first_prompt(tmp_path, typed)).exchanges
    assert changed[0].prompt == typed


def test_an_unanswered_pao_prompt_leaves_no_exchange(tmp_path: Path) -> None:
    lines = REAL.read_text().splitlines()
    record = json.loads(next(line for line in lines if json.loads(line).get("type") == "user"))
    record["message"]["content"] = pao_prompts()[0]
    path = tmp_path / "only.jsonl"
    path.write_text(json.dumps(record) + "\n")
    assert read_exchanges(path).exchanges == []
