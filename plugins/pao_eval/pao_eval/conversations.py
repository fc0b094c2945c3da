"""The conversational corpus format: long multi-session dialogs, questions with labelled evidence turns.

A corpus of this kind holds ``conversations.jsonl`` (one session a line: ``conversation``,
``session``, ``date``, ``turns`` of ``{"id", "speaker", "text"}``) instead of ``memory.jsonl``,
and its ``queries.jsonl`` rows carry ``evidence`` (turn ids). :func:`as_memory` turns it into
what the stores load: each session an entity (``<conversation>, session N (DATE)``), each turn
one observation (``Speaker: text``) in order, so a turn is the item ``obs:<entity>#<index>``.
:func:`evidence_scores` scores the briefings without a model: the share of each question's
evidence turns among its first ten items (recall@10), averaged per question, and per kind.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    from pao_eval.records import QueryRun

CONVERSATIONS = "conversations.jsonl"


def is_conversational(corpus: Path) -> bool:
    return (corpus / CONVERSATIONS).is_file() and not (corpus / "memory.jsonl").exists()


def session_entity(row: dict[str, Any]) -> str:
    """The entity a session is stored as: its conversation, number and date in words (``14 March 2026``)."""
    date = dt.date.fromisoformat(row["date"])
    return f"{row['conversation']}, session {row['session']} ({date.day} {date:%B %Y})"


def turn_ids(sessions: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Item id (``obs:<entity>#<index>``) to turn id, for every turn."""
    return {f"obs:{session_entity(row)}#{index}": turn["id"]
            for row in sessions for index, turn in enumerate(row["turns"])}


def as_memory(corpus: Path, folder: Path, read_jsonl: Any) -> list[dict[str, Any]]:
    """Write ``folder/memory.jsonl`` (the MCP memory server's format) from the corpus's sessions;
    the sessions, for scoring."""
    sessions = read_jsonl(corpus / CONVERSATIONS)
    lines = [{"type": "entity", "name": session_entity(row), "entityType": "conversation session",
              "observations": [f"{turn['speaker']}: {turn['text']}" for turn in row["turns"]]} for row in sessions]
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    target = folder / "memory.jsonl"
    partial = folder / ".memory.jsonl.part"
    partial.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    os.replace(partial, target)
    return sessions


def evidence_scores(runs: Sequence[QueryRun], sessions: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Evidence recall@10 overall and per kind, per-query rows, items and latency."""
    turns = turn_ids(sessions)
    recalls: dict[str, list[float]] = {}
    rows = []
    for run in runs:
        evidence = set(run.query.evidence)
        found = [turns.get(item.id) for item in run.briefing.items[:10]]
        recall = len(evidence & set(found)) / len(evidence) if evidence else 0.0
        recalls.setdefault(run.query.kind, []).append(recall)
        rows.append({"qid": run.query.qid, "kind": run.query.kind, "topic": run.query.topic,
                     "items": len(run.briefing.items), "recall_at_10": round(recall, 3),
                     "latency_ms": run.latency_ms, "found": [turn for turn in found if turn]})
    every = [value for values in recalls.values() for value in values]
    latencies = [run.latency_ms for run in runs]
    return {
        "queries": len(runs),
        "evidence_recall_at_10": round(statistics.fmean(every), 4) if every else 0.0,
        "by_kind": {kind: round(statistics.fmean(values), 4) for kind, values in sorted(recalls.items())},
        "items": round(statistics.fmean(len(run.briefing.items) for run in runs), 2) if runs else 0.0,
        "latency_p50_ms": round(statistics.median(latencies), 2) if latencies else 0.0,
        "per_query": rows,
    }
