"""A webhook receiver on loopback (Slack- or ntfy-style JSON POSTs), recording what pao's notifier sends."""

from __future__ import annotations

from pao_testing.loopback_stub import LoopbackStub, RecordedRequest, Reply


class WebhookReceiver(LoopbackStub):
    """Answers every request ``{"ok": true}`` and records it (``wait_for``, ``requests``)."""

    def respond(self, request: RecordedRequest) -> Reply:
        return Reply.json({"ok": True})
