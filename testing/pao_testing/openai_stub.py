"""A loopback stand-in for the OpenAI Responses API, recording every request.

Codex CLI under test gets a ``model_provider`` whose ``base_url`` is
``<stub.url>/v1`` with ``wire_api = "responses"``. ``POST /v1/responses`` answers
with the Responses SSE stream (``response.created``, ``response.output_item.added``,
``response.output_text.delta``, ``response.output_item.done``,
``response.completed``) carrying ``reply``; ``GET /v1/models`` lists one model;
anything else is a 404, recorded like the rest.
"""

from __future__ import annotations

import itertools
from typing import Any

import attrs

from pao_testing.loopback_stub import LoopbackStub, RecordedRequest, Reply, serve_forever

_ids = itertools.count(1)


@attrs.define
class OpenAIResponsesStub(LoopbackStub):
    """Answers ``/v1/responses`` with a short streamed assistant message."""

    model: str = "stub-model"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def responses(self) -> list[RecordedRequest]:
        """The ``POST /v1/responses`` requests so far, oldest first."""
        with self._changed:
            return [r for r in self.requests if r.method == "POST" and r.route == "/v1/responses"]

    def respond(self, request: RecordedRequest) -> Reply:
        if request.method == "POST" and request.route == "/v1/responses":
            model = request.body.get("model", self.model) if isinstance(request.body, dict) else self.model
            return Reply.sse(_response_events(model, self.reply))
        if request.method == "GET" and request.route == "/v1/models":
            return Reply.json({"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "stub"}]})
        return Reply.json({"error": {"message": f"no route {request.route}", "type": "not_found"}}, status=404)


def _response_events(model: str, text: str) -> list[tuple[str, Any]]:
    number = next(_ids)
    response_id, item_id = f"resp_stub_{number}", f"msg_stub_{number}"
    message = {"type": "message", "id": item_id, "role": "assistant", "status": "in_progress", "content": []}
    done = dict(message, status="completed", content=[{"type": "output_text", "text": text, "annotations": []}])
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 3,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 13,
    }
    response = {"id": response_id, "object": "response", "model": model, "status": "in_progress", "output": []}
    events = [
        ("response.created", {"response": response}),
        ("response.output_item.added", {"output_index": 0, "item": message}),
        ("response.output_text.delta", {"item_id": item_id, "output_index": 0, "content_index": 0, "delta": text}),
        ("response.output_item.done", {"output_index": 0, "item": done}),
        ("response.completed", {"response": dict(response, status="completed", output=[done], usage=usage)}),
    ]
    return [(name, dict(data, type=name)) for name, data in events]


if __name__ == "__main__":  # pragma: no cover
    serve_forever(OpenAIResponsesStub())
