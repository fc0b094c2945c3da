"""A webhook receiver on loopback (Slack- or ntfy-style JSON POSTs), recording what pao's notifier sends."""

from __future__ import annotations

import json
from pathlib import Path

from pao_testing.loopback_stub import LoopbackStub, RecordedRequest, Reply


class WebhookReceiver(LoopbackStub):
    """Answers every request ``{"ok": true}`` and records it (``wait_for``, ``requests``)."""

    def respond(self, request: RecordedRequest) -> Reply:
        return Reply.json({"ok": True})


def argv_recorder(folder: Path) -> tuple[Path, Path]:
    """A ``[notify] command`` for tests: an executable that appends its argv (one JSON list per run) to a log."""
    log, script = folder / "argv.jsonl", folder / "record-argv"
    script.write_text('#!/usr/bin/env python3\nimport json, sys\n'
                      f'open({str(log)!r}, "a").write(json.dumps(sys.argv[1:]) + "\\n")\n')
    script.chmod(script.stat().st_mode | 0o100)
    return script, log


def recorded_argv(log: Path) -> list[list[str]]:
    """The argv lists :func:`argv_recorder`'s executable logged, oldest first."""
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
