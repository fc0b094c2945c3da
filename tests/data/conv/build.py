#!/usr/bin/env python3
"""Write the conversational corpus's files from ``source_conversations.py`` and ``source_questions.py``.

    python3 tests/data/conv/build.py      # deterministic: the same files every run

Files: ``conversations.jsonl`` (one session a line, its turns with ids ``<conversation>:D<session>:<turn>``),
``queries.jsonl`` (questions with their evidence turn ids), ``split.json`` (``dev`` and ``heldout``:
every other question of each conversation, in order). Standard library only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from source_conversations import CONVERSATIONS  # noqa: E402
from source_questions import QUESTIONS  # noqa: E402


def sessions() -> tuple[list[dict], dict[str, str]]:
    rows, keys = [], {}
    for name, conversation in CONVERSATIONS.items():
        for number, (date, turns) in enumerate(conversation, start=1):
            written = []
            for position, (speaker, text, *key) in enumerate(turns, start=1):
                turn_id = f"{name}:D{number}:{position}"
                written.append({"id": turn_id, "speaker": speaker, "text": text})
                if key:
                    if key[0] in keys:
                        raise SystemExit(f"evidence key used twice: {key[0]}")
                    keys[key[0]] = turn_id
            rows.append({"conversation": name, "session": number, "date": date, "turns": written})
    return rows, keys


def questions(keys: dict[str, str]) -> tuple[list[dict], dict[str, list[str]]]:
    rows, split = [], {"dev": [], "heldout": []}
    for name, asked in QUESTIONS.items():
        for position, (kind, question, evidence) in enumerate(asked):
            qid = f"c{len(rows) + 1:02d}"
            rows.append({"qid": qid, "topic": question, "kind": kind, "conversation": name,
                         "evidence": [keys[key] for key in evidence]})
            split["dev" if position % 2 == 0 else "heldout"].append(qid)
    return rows, split


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")


def main() -> None:
    session_rows, keys = sessions()
    question_rows, split = questions(keys)
    unused = set(keys) - {key for asked in QUESTIONS.values() for _, _, evidence in asked for key in evidence}
    if unused:
        raise SystemExit(f"evidence keys no question uses: {sorted(unused)}")
    write_jsonl(HERE / "conversations.jsonl", session_rows)
    write_jsonl(HERE / "queries.jsonl", question_rows)
    (HERE / "split.json").write_text(json.dumps(split, indent=1) + "\n", encoding="utf-8")
    turns = sum(len(row["turns"]) for row in session_rows)
    print(f"{len(session_rows)} sessions, {turns} turns, {len(question_rows)} questions "
          f"(dev {len(split['dev'])}, heldout {len(split['heldout'])})")


if __name__ == "__main__":
    main()
