"""A loopback stand-in for the Gemini API, recording every request.

Gemini CLI under test gets ``GOOGLE_GEMINI_BASE_URL=<stub.url>``. Each turn makes a
``:generateContent`` call (model routing, which asks for JSON through a response
schema) and a ``:streamGenerateContent?alt=sse`` call. The stub answers the first
with JSON (an object built from the requested schema, or ``reply`` as text) and the
second with one SSE chunk carrying ``reply``; ``:countTokens`` gets a count and
anything else a 404, recorded like the rest. A streamed request whose contents hold
``tool_trigger`` and no function response yet is answered with a ``functionCall`` of
``tool_call`` (its name, or the declared function whose name ends with it).
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from pao_testing.loopback_stub import LoopbackStub, RecordedRequest, Reply, serve_forever
from pao_testing.openai_stub import offered_name

_USAGE = {"promptTokenCount": 10, "candidatesTokenCount": 3, "totalTokenCount": 13}


@attrs.define
class GeminiStub(LoopbackStub):
    """Answers ``generateContent`` and ``streamGenerateContent`` with short replies."""

    tool_trigger: str | None = None
    tool_call: tuple[str, dict[str, Any]] = ("run_shell_command", {"command": "true"})
    error_trigger: str | None = None
    """A streamed request whose contents hold this is answered 400 INVALID_ARGUMENT (an API error Gemini CLI does not
    retry)."""

    def streamed(self) -> list[RecordedRequest]:
        """The ``:streamGenerateContent`` requests so far, oldest first."""
        with self._changed:
            return [r for r in self.requests if r.route.endswith(":streamGenerateContent")]

    def respond(self, request: RecordedRequest) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        if request.method != "POST":
            return _not_found(request)
        if request.route.endswith(":streamGenerateContent"):
            if self.error_trigger and self.error_trigger in json.dumps(body.get("contents")):
                error = {"code": 400, "message": "pao-stub: invalid request (error_trigger)", "status": "INVALID_ARGUMENT"}
                return Reply.json({"error": error}, 400)
            if self.tool_trigger and _wants_tool(body, self.tool_trigger):
                declared = [d.get("name", "") for tool in body.get("tools") or [] if isinstance(tool, dict)
                            for d in tool.get("functionDeclarations") or [] if isinstance(d, dict)]
                call = {"name": offered_name(self.tool_call[0], declared), "args": self.tool_call[1]}
                return Reply.sse([(None, _answer_parts([{"functionCall": call}]))])
            return Reply.sse([(None, _answer(self.reply))])
        if request.route.endswith(":generateContent"):
            schema = _schema_of(body.get("generationConfig") or {})
            text = json.dumps(_sample(schema)) if schema is not None else self.reply
            return Reply.json(_answer(text))
        if request.route.endswith(":countTokens"):
            return Reply.json({"totalTokens": 10})
        return _not_found(request)


def _not_found(request: RecordedRequest) -> Reply:
    return Reply.json({"error": {"code": 404, "message": f"no route {request.route}", "status": "NOT_FOUND"}}, 404)


def _wants_tool(body: dict[str, Any], trigger: str) -> bool:
    contents = json.dumps(body.get("contents") or [])
    return trigger in contents and '"functionResponse"' not in contents


def _answer(text: str) -> dict[str, Any]:
    return _answer_parts([{"text": text}])


def _answer_parts(parts: list[dict[str, Any]]) -> dict[str, Any]:
    content = {"role": "model", "parts": parts}
    return {"candidates": [{"content": content, "finishReason": "STOP", "index": 0}], "usageMetadata": _USAGE}


def _schema_of(generation: dict[str, Any]) -> dict[str, Any] | None:
    for key in ("responseJsonSchema", "responseSchema", "response_json_schema"):
        if isinstance(generation.get(key), dict):
            return generation[key]
    return {} if generation.get("responseMimeType") == "application/json" else None


def _sample(schema: dict[str, Any]) -> Any:
    """The smallest value that satisfies a JSON schema: first enum choices, required keys."""
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        properties = schema.get("properties") or {}
        return {key: _sample(properties.get(key) or {}) for key in schema.get("required") or properties}
    if kind == "array":
        return []
    return {"string": "stub", "boolean": False, "integer": 0, "number": 0}.get(kind)


if __name__ == "__main__":  # pragma: no cover
    serve_forever(GeminiStub())
