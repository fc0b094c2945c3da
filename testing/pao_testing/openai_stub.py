"""A loopback stand-in for the OpenAI Responses API, recording every request.

Codex CLI under test gets a ``model_provider`` whose ``base_url`` is
``<stub.url>/v1`` with ``wire_api = "responses"``. ``POST /v1/responses`` answers
with the Responses SSE stream (``response.created``, ``response.output_item.added``,
``response.output_text.delta``, ``response.output_item.done``,
``response.completed``) carrying ``reply``; ``GET /v1/models`` lists one model;
anything else is a 404, recorded like the rest. A request whose input holds
``tool_trigger`` and no tool output yet is answered with a ``function_call`` of
``tool_call`` (its name, or the offered tool whose name ends with it: CLIs prefix MCP
tools with their server's name).
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import attrs

from pao_testing.loopback_stub import LoopbackStub, RecordedRequest, Reply, serve_forever

_ids = itertools.count(1)


@attrs.define
class OpenAIResponsesStub(LoopbackStub):
    """Answers ``/v1/responses`` with a short streamed assistant message."""

    model: str = "stub-model"
    tool_trigger: str | None = None
    tool_call: tuple[str, dict[str, Any]] = ("shell", {"command": ["true"]})

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def responses(self) -> list[RecordedRequest]:
        """The ``POST /v1/responses`` requests so far, oldest first."""
        with self._changed:
            return [r for r in self.requests if r.method == "POST" and r.route == "/v1/responses"]

    def side_request(self, request: RecordedRequest) -> bool:
        """Codex 0.171 also asks for a title for the conversation, from a thread of its own carrying the user's message
        and context (turn metadata ``"thread_source": "thread_title"``); which of the two arrives first varies."""
        try:
            metadata = json.loads(request.header("x-codex-turn-metadata") or "{}")
        except ValueError:
            return False
        return isinstance(metadata, dict) and metadata.get("thread_source", "user") != "user"

    def respond(self, request: RecordedRequest) -> Reply:
        if request.method == "POST" and request.route == "/v1/responses":
            body = request.body if isinstance(request.body, dict) else {}
            model = body.get("model", self.model)
            if self.tool_trigger and _wants_tool(body, self.tool_trigger):
                return Reply.sse(_function_call_events(model, *_offered(body, self.tool_call[0]), self.tool_call[1]))
            return Reply.sse(_response_events(model, self.reply))
        if request.method == "GET" and request.route == "/v1/models":
            return Reply.json({"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "stub"}]})
        return Reply.json({"error": {"message": f"no route {request.route}", "type": "not_found"}}, status=404)


def offered_name(wanted: str, offered: list[str]) -> str:
    """``wanted`` if offered, else the offered tool whose name ends with it (``mcp__pao__x`` for ``x``)."""
    if wanted in offered:
        return wanted
    return next((name for name in offered if name.endswith(wanted)), wanted)


def _offered(body: dict[str, Any], wanted: str) -> tuple[str | None, str]:
    """The namespace (Codex groups each MCP server's tools in one) and name of the tool to call."""
    tools = [tool for tool in body.get("tools") or [] if isinstance(tool, dict)]
    for space in tools:
        inner = [tool.get("name", "") for tool in space.get("tools") or [] if isinstance(tool, dict)]
        if space.get("type") == "namespace" and wanted in inner:
            return space.get("name"), wanted
    return None, offered_name(wanted, [tool.get("name", "") for tool in tools])


def _wants_tool(body: dict[str, Any], trigger: str) -> bool:
    items = body.get("input") if isinstance(body.get("input"), list) else []
    if any(isinstance(item, dict) and item.get("type") == "function_call_output" for item in items):
        return False
    return trigger in json.dumps(items)


def _function_call_events(model: str, namespace: str | None, name: str, arguments: dict[str, Any]) -> list[tuple[str, Any]]:
    number = next(_ids)
    response_id = f"resp_stub_{number}"
    call = {"type": "function_call", "id": f"fc_stub_{number}", "call_id": f"call_stub_{number}", "name": name,
            "arguments": json.dumps(arguments), "status": "completed", **({"namespace": namespace} if namespace else {})}
    response = {"id": response_id, "object": "response", "model": model, "status": "in_progress", "output": []}
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 3,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 13}
    events = [
        ("response.created", {"response": response}),
        ("response.output_item.added", {"output_index": 0, "item": dict(call, status="in_progress")}),
        ("response.output_item.done", {"output_index": 0, "item": call}),
        ("response.completed", {"response": dict(response, status="completed", output=[call], usage=usage)}),
    ]
    return [(event, dict(data, type=event)) for event, data in events]


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
