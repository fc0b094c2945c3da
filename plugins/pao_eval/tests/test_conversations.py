"""``pao eval`` on a conversational corpus (tests/data/conv): each dialog turn an observation, questions
scored by their labelled evidence turns, and the held-out figures through the real pipeline."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pao_core.models import Briefing, MemoryItem
from pao_eval.conversations import as_memory, evidence_scores, is_conversational, session_entity
from pao_eval.evaluate import Query, QueryRun, _jsonl

CONV = Path(__file__).resolve().parents[3] / "tests" / "data" / "conv"
EVAL_TIMEOUT = 600
"""Seconds a `pao eval` run may take (loading embeds every turn)."""


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    copy = tmp_path / "conv"
    shutil.copytree(CONV, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def _queries(corpus: Path) -> dict[str, dict]:
    return {row["qid"]: row for row in _jsonl(corpus / "queries.jsonl")}


def test_each_turn_is_one_observation_of_its_session(corpus: Path, tmp_path: Path) -> None:
    assert is_conversational(corpus)
    sessions = as_memory(corpus, tmp_path / "loaded", _jsonl)
    memory = _jsonl(tmp_path / "loaded" / "memory.jsonl")
    assert len(memory) == len(sessions) == 12
    first = memory[0]
    assert first["type"] == "entity" and first["name"] == "maya-jon, session 1 (10 January 2026)"
    assert first["observations"][2].startswith("Maya: I worked the night shifts on the cardiac ward")
    assert sum(len(entity["observations"]) for entity in memory) == 168


def test_evidence_recall_counts_turns_among_the_first_ten(corpus: Path, tmp_path: Path) -> None:
    sessions = as_memory(corpus, tmp_path / "loaded", _jsonl)
    entity = session_entity(sessions[3])  # maya-jon, session 4: the shop opened (turn 1), Theo (turn 5)
    question = Query("x1", "who helps at the shop", "single-hop", None, None,
                     ("maya-jon:D4:5", "maya-jon:D5:10"))
    other = Query("x2", "when did it open", "temporal", None, None, ("maya-jon:D4:1",))

    def run(query: Query, idents: list[str]) -> QueryRun:
        items = tuple(MemoryItem("longterm", ident, entity, "text", kind="observation") for ident in idents)
        return QueryRun(query, Briefing(topic=query.topic, markdown="", items=items, backends={}, elapsed_ms=1.0), 5.0)

    filler = [f"obs:{entity}#{n}" for n in range(5, 14)]  # nine turns that are no evidence
    report = evidence_scores([run(question, [f"obs:{entity}#4", *filler]),
                              run(other, [*filler, f"obs:{entity}#1", f"obs:{entity}#0"])], sessions)
    # half of x1's evidence is in its top ten; x2's turn is eleventh and does not count
    assert report["by_kind"] == {"single-hop": 0.5, "temporal": 0.0}
    assert report["evidence_recall_at_10"] == 0.25
    assert report["per_query"][0]["found"][0] == "maya-jon:D4:5"


def test_the_corpus_files_are_what_its_builder_writes(corpus: Path, tmp_path: Path) -> None:
    before = {name: (corpus / name).read_bytes() for name in ("conversations.jsonl", "queries.jsonl", "split.json")}
    import subprocess
    import sys

    subprocess.run([sys.executable, str(corpus / "build.py")], check=True, capture_output=True)
    assert before == {name: (corpus / name).read_bytes() for name in before}
    split = json.loads((corpus / "split.json").read_text())
    assert len(split["dev"]) == len(split["heldout"]) == 25 and not set(split["dev"]) & set(split["heldout"])


def _evaluated(pao, corpus: Path, *flags: str) -> dict:
    done = pao("eval", str(corpus), "--split", "heldout", "--json", "--repeat", "1", *flags, timeout=EVAL_TIMEOUT)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    queries = _queries(corpus)
    # the report's figure is what its own per-query turns say it is
    recalls = [len(set(row["found"]) & set(queries[row["qid"]]["evidence"])) / len(queries[row["qid"]]["evidence"])
               for row in report["per_query"]]
    assert report["queries"] == 25
    assert report["evidence_recall_at_10"] == pytest.approx(sum(recalls) / len(recalls), abs=1e-3)
    return report


def test_semantic_search_earns_its_place_on_held_out_conversations(pao, corpus: Path) -> None:
    """Issue 31: on turn-level conversational evidence, semantic + lexical >= lexical + 0.05 recall@10
    (held-out questions; the knobs were fitted on the dev ones)."""
    both = _evaluated(pao, corpus)
    lexical = _evaluated(pao, corpus, "--lexical")
    assert both["semantic"] and not lexical["semantic"]
    assert both["evidence_recall_at_10"] >= lexical["evidence_recall_at_10"] + 0.05, (both, lexical)
    assert both["evidence_recall_at_10"] >= HELD_OUT_FLOOR


HELD_OUT_FLOOR = 0.70
"""The held-out evidence recall@10 measured when this test was added (0.733; docs/benchmarks.md), less a margin."""
