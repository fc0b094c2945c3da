"""``pao status NAME`` for people: one labelled line per fact, in words (``--json`` has the record as it is)."""

from __future__ import annotations

import datetime as dt
from typing import Any, Mapping

from pao_agents.light import age_text
from pao_core.output import plain

SOURCES = {"hooks": "from its CLI's events", "screen": "from its screen", "terminal": "its terminal cannot be asked here",
           "machine": "its machine says"}


def status_lines(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(label, text)`` for each fact of an agent's public JSON shape (``record_json`` with its observation)."""
    observed, extra = data.get("observed") or {}, data.get("extra") or {}
    state = observed.get("state") or data["state"]
    said = f"{state}: {observed['reason']}" if observed.get("reason") else state
    source = SOURCES.get(data.get("state_source") or "", "")
    created = dt.datetime.fromisoformat(data["created_at"])
    updated = dt.datetime.fromisoformat(data["updated_at"])
    lines = [
        ("name", data["name"]),
        ("state", f"{said} ({source})" if source else said),
        ("topic", data["topic"]),
        ("folder", data["folder"]),
        ("host", f"{data['host']} in {data['terminal']}" + (f" ({data['target']})" if data["target"] else "")),
        ("machine", data["machine"] or "this machine"),
        ("started", f"{age_text(created)} ago ({created:%Y-%m-%d %H:%M:%S %Z}); last change {age_text(updated)} ago"),
    ]
    if data.get("pid"):
        lines.append(("pid", str(data["pid"])))
    if data.get("session_id"):
        lines.append(("session", data["session_id"]))
    delivery = data.get("delivery") or {}
    if delivery:
        receipt = f", confirmed by its CLI at {delivery['receipt']}" if delivery.get("receipt") else ""
        lines.append(("briefing", f"through the {delivery.get('channel')} channel{receipt}"))
    worktree = extra.get("worktree")
    if isinstance(worktree, Mapping):
        base = worktree.get("base") or "a detached HEAD"
        lines.append(("worktree", f"{worktree.get('root')} on {worktree.get('branch')} (from {base}; "
                                  f"'pao diff {data['name']}' shows its changes)"))
    if extra.get("checkpoint"):
        lines.append(("checkpoint", f"{extra['checkpoint']} ({extra.get('checkpoint_at')})"))
    return [(label, plain(text)) for label, text in lines]


def print_status(data: Mapping[str, Any]) -> None:
    for label, text in status_lines(data):
        print(f"{label:<11} {text}")
