"""A loopback stand-in for the Anthropic Messages API, recording every request.

Coding-agent CLIs under test point ``ANTHROPIC_BASE_URL`` here. The stub answers
``HEAD /`` (a connectivity probe), streams a short SSE reply to
``POST /v1/messages`` (or a JSON message when the request does not ask for a
stream), answers ``count_tokens``, and records each request so a test can prove
what reached the model's context. ``holding()`` (or ``delay``) holds replies back
(to see the agent busy); a user message containing ``tool_trigger`` is answered with
a ``tool_use`` of ``tool_call`` (for the agent's permission menu, or to call an MCP
tool: a ``ToolSearch`` for it first when the CLI defers its schema). The server
itself is :class:`~pao_testing.loopback_stub.LoopbackStub`.
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable, Iterator, cast

import attrs

from pao_testing.loopback_stub import LoopbackStub, RecordedRequest, Reply, serve_forever


@attrs.frozen
class MessagesRequest(RecordedRequest):
    """A recorded request, read as the Messages API."""

    @property
    def is_conversation(self) -> bool:
        """A turn of the agent's conversation (it offers tools), not a side call such as a title."""
        return self.is_message and isinstance(self.body, dict) and bool(self.body.get("tools"))

    @property
    def is_message(self) -> bool:
        return self.method == "POST" and self.route == "/v1/messages"

    def text(self) -> str:
        """System prompt and every message's text of a Messages request, joined."""
        if not isinstance(self.body, dict):
            return ""
        return "\n".join(_texts(self.body.get("system"))) + "\n" + "\n".join(
            text for message in self.body.get("messages") or [] for text in _texts(message.get("content"))
        )

    def first_user_text(self) -> str:
        """The text of the first user message (all its content blocks)."""
        if not isinstance(self.body, dict):
            return ""
        for message in self.body.get("messages") or []:
            if message.get("role") == "user":
                return "\n".join(_texts(message.get("content")))
        return ""


def _texts(content: Any) -> Iterator[str]:
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, dict):
                if isinstance(block.get("text"), str):
                    yield block["text"]
                elif "content" in block:
                    yield from _texts(block["content"])


@attrs.define
class AnthropicStub(LoopbackStub):
    """Answers the Messages API; use as a context manager or call ``start``/``stop``."""

    request_type = MessagesRequest

    tool_trigger: str | None = None
    tool_call: tuple[str, dict[str, Any]] = ("Bash", {"command": "touch pao-stub-file", "description": "Create a file"})
    error_trigger: str | None = None
    """A turn of the conversation whose text holds it is answered HTTP 400 (an API error ends the turn)."""

    def messages(self) -> list[MessagesRequest]:
        """The ``POST /v1/messages`` requests so far, oldest first."""
        with self._changed:
            return [r for r in self.requests if isinstance(r, MessagesRequest) and r.is_message]

    def wait_for_message(
        self, contains: str, timeout: float, where: Callable[[MessagesRequest], bool] | None = None
    ) -> MessagesRequest | None:
        """Wait until a Messages request whose text contains ``contains`` (and matches ``where``) arrives."""

        def matches(request: RecordedRequest) -> bool:
            return (
                isinstance(request, MessagesRequest)
                and request.is_message
                and contains in request.text()
                and (where is None or where(request))
            )

        return cast("MessagesRequest | None", self.wait_for(matches, timeout))

    def holds_back(self, request: RecordedRequest) -> bool:
        return request.method == "POST" and request.route == "/v1/messages"

    def respond(self, request: RecordedRequest) -> Reply:
        if request.method == "HEAD":  # the CLI's connectivity probe
            return Reply(200, "text/plain", b"")
        if request.method == "POST" and request.route == "/v1/messages/count_tokens":
            return Reply.json({"input_tokens": max(1, int(request.header("content-length") or 0) // 4)})
        if self.error_trigger and isinstance(request, MessagesRequest) and request.is_conversation \
                and self.error_trigger in request.text():
            error = {"type": "invalid_request_error", "message": "pao-stub: invalid request (error_trigger)"}
            return Reply.json({"type": "error", "error": error}, status=400)
        if request.method == "POST" and request.route == "/v1/messages":
            body = request.body
            model = body.get("model", "stub") if isinstance(body, dict) else "stub"
            if not (isinstance(body, dict) and body.get("stream")):
                return Reply.json(_message(model, self.reply))
            return Reply.sse(_stream(model, self.reply, _tool_to_call(body, self.tool_trigger, self.tool_call)))
        return Reply.json({"type": "error", "error": {"type": "not_found_error", "message": request.path}}, status=404)


def _stream(model: str, reply: str, tool: tuple[str, dict[str, Any]] | None) -> list[tuple[str, Any]]:
    """The SSE events of one streamed assistant turn: ``reply`` as text, or a ``tool_use`` of ``tool``."""
    start = dict(_message(model, ""), content=[], stop_reason=None)
    if tool is None:
        block: dict[str, Any] = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": reply}
    else:
        block = {"type": "tool_use", "id": f"toolu_stub_{time.monotonic_ns()}", "name": tool[0], "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(tool[1])}
    stop = {"stop_reason": "tool_use" if tool else "end_turn", "stop_sequence": None}
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"message": start}),
        ("content_block_start", {"index": 0, "content_block": block}),
        ("ping", {}),
        ("content_block_delta", {"index": 0, "delta": delta}),
        ("content_block_stop", {"index": 0}),
        ("message_delta", {"delta": stop, "usage": {"output_tokens": 3}}),
        ("message_stop", {}),
    ]
    return [(name, {"type": name, **data}) for name, data in events]


def _tool_to_call(body: Any, trigger: str | None, call: tuple[str, dict[str, Any]]) -> tuple[str, dict[str, Any]] | None:
    """``call`` when the user's turn asks for it. When the CLI defers the tool (Claude Code 2.1
    loads MCP tools' schemas on demand), a ``ToolSearch`` for it first, again each second
    while its server is still connecting (every 2 s, at most ``SEARCHES`` times), then ``call``."""
    if not trigger or not isinstance(body, dict):
        return None
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    assistants = [m for m in messages if m.get("role") == "assistant"]
    searches = sum(_used(m, "ToolSearch") for m in assistants)
    asked = _wants_tool(body, trigger) or (searches and _used(assistants[-1], "ToolSearch"))
    if not asked or any(_used(m, call[0]) for m in assistants):
        return None
    offered = {tool.get("name") for tool in body.get("tools") or [] if isinstance(tool, dict)}
    if call[0] in offered or "ToolSearch" not in offered or searches >= SEARCHES:
        return call
    if searches:
        time.sleep(2.0)  # the server is still connecting: as a model would, search again a moment later
    return ("ToolSearch", {"query": f"select:{call[0]}", "max_results": 1})


SEARCHES = 30


def _used(message: dict[str, Any], name: str) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_use" and b.get("name") == name
                                             for b in content)


def _wants_tool(body: Any, trigger: str | None) -> bool:
    """The user's turn (every user message since the last assistant one) holds the trigger and no tool result.

    CLIs add user-role messages of their own around the user's text (reminders, the list
    of deferred MCP tools), so the whole turn is read, not only its last message.
    """
    if not trigger or not isinstance(body, dict):
        return False
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    last_assistant = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    turn = [m.get("content") for m in messages[last_assistant + 1:] if m.get("role") == "user"]
    for content in turn:
        if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return False
    return any(trigger in text for content in turn for text in _texts(content))


def _message(model: str, text: str) -> dict[str, Any]:
    return {
        "id": f"msg_stub_{time.monotonic_ns()}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 3},
    }


def main() -> None:  # pragma: no cover - manual use: python -m pao_testing.anthropic_stub
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0)
    args = parser.parse_args()
    serve_forever(AnthropicStub(port=args.port, delay=args.delay))


if __name__ == "__main__":  # pragma: no cover
    main()
