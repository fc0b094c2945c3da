"""A loopback stand-in for the Gemini API, recording every request.

Gemini CLI under test gets ``GOOGLE_GEMINI_BASE_URL=<stub.url>``. Each turn makes a
``:generateContent`` call (model routing, which asks for JSON through a response
schema) and a ``:streamGenerateContent?alt=sse`` call. The stub answers the first
with JSON (an object built from the requested schema, or ``reply`` as text) and the
second with one SSE chunk carrying ``reply``; ``:countTokens`` gets a count and
anything else a 404, recorded like the rest.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from pao_testing.loopback_stub import LoopbackStub, RecordedRequest, Reply, serve_forever

_USAGE = {"promptTokenCount": 10, "candidatesTokenCount": 3, "totalTokenCount": 13}


@attrs.define
class GeminiStub(LoopbackStub):
    """Answers ``generateContent`` and ``streamGenerateContent`` with short replies."""

    def streamed(self) -> list[RecordedRequest]:
        """The ``:streamGenerateContent`` requests so far, oldest first."""
        with self._changed:
            return [r for r in self.requests if r.route.endswith(":streamGenerateContent")]

    def respond(self, request: RecordedRequest) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        if request.method != "POST":
            return _not_found(request)
        if request.route.endswith(":streamGenerateContent"):
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


def _answer(text: str) -> dict[str, Any]:
    content = {"role": "model", "parts": [{"text": text}]}
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
