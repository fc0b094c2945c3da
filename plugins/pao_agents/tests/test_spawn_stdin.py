"""``pao spawn --briefing-stdin``: a briefing composed on another machine (pao-machines' ``spawn --on``) is read
from stdin and cleaned again here, whatever the other machine sent."""

from __future__ import annotations

import io
import json

import pytest

from pao_agents.commands import _briefing_from_stdin
from pao_core.errors import PaoError
from pao_core.models import Briefing, converter


def test_a_briefing_from_another_machine_is_cleaned_again_here(monkeypatch: pytest.MonkeyPatch) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    sent = Briefing("fix it", f"# Briefing\n\x1b[31mred\x1b[0m and {token}\n", (), {}, 1.0)
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(converter.unstructure(sent))))
    received = _briefing_from_stdin()
    assert received.topic == "fix it" and "red" in received.markdown
    assert token not in received.markdown and "\x1b" not in received.markdown
    monkeypatch.setattr("sys.stdin", io.StringIO("{not json"))
    with pytest.raises(PaoError, match="the briefing on stdin is not readable"):
        _briefing_from_stdin()
