"""The Responses stub tells the user's conversation from the requests Codex sends for itself."""

from __future__ import annotations

import json
import urllib.request

from pao_testing.openai_stub import OpenAIResponsesStub


def _post(stub: OpenAIResponsesStub, text: str, thread_source: str) -> None:
    metadata = json.dumps({"thread_source": thread_source, "session_id": f"{thread_source}-thread"})
    body = json.dumps({"model": "stub-model", "input": [{"role": "user", "content": [{"type": "input_text", "text": text}]}]})
    request = urllib.request.Request(f"{stub.base_url}/responses", data=body.encode(), method="POST",
                                     headers={"content-type": "application/json", "x-codex-turn-metadata": metadata})
    with urllib.request.urlopen(request, timeout=10) as response:
        response.read()


def test_a_title_request_that_arrives_first_is_not_the_user_s_turn() -> None:
    """Codex 0.171 sends the user's first message twice: its turn, and a title request from a thread of its own; the
    title request reached the stub first in a CI run, and the test then read that thread's id as the session's."""
    with OpenAIResponsesStub() as stub:
        _post(stub, "fix the exporter MARK-1", "thread_title")
        _post(stub, "fix the exporter MARK-1", "user")
        sent = stub.wait_for_text("/v1/responses", "MARK-1", 5)
    assert sent is not None and json.loads(sent.header("x-codex-turn-metadata"))["session_id"] == "user-thread"
    assert len(stub.responses()) == 2
