"""Realistic large inputs for the scale benches: an MCP memory file of N observations and N Claude Code
transcripts, both made by recombining the eval corpus (``tests/data/eval``), so lengths, vocabulary and
structure are those of real memory; every observation and session is distinct.

    .venv/bin/python benches/scale_corpus.py memory OUT.jsonl --observations 20000
    .venv/bin/python benches/scale_corpus.py transcripts OUT_DIR --sessions 300
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import uuid
from pathlib import Path

EVAL = Path(__file__).resolve().parent.parent / "tests" / "data" / "eval"


def memory_lines(observations: int, seed: int = 3) -> list[str]:
    """Entities of the eval corpus, renamed per copy, whose observations carry a copy number and a date."""
    rng = random.Random(seed)
    entities = [json.loads(line) for line in (EVAL / "memory.jsonl").read_text().splitlines()
                if line.strip() and json.loads(line).get("type") == "entity"]
    lines, made, copy = [], 0, 0
    while made < observations:
        copy += 1
        for entity in entities:
            if made >= observations:
                break
            wanted = min(len(entity["observations"]), observations - made)
            texts = [f"{text} (note {copy}.{n}, {rng.randint(2019, 2026)}-{rng.randint(1, 12):02d})"
                     for n, text in enumerate(entity["observations"][:wanted])]
            lines.append(json.dumps({"type": "entity", "name": f"{entity['name']} {copy}",
                                     "entityType": entity["entityType"], "observations": texts}))
            made += len(texts)
    names = [json.loads(line)["name"] for line in lines]
    for _ in range(len(names) // 4):
        source, target = rng.sample(names, 2)
        lines.append(json.dumps({"type": "relation", "from": source, "to": target, "relationType": "relates to"}))
    return lines


def write_transcripts(folder: Path, sessions: int, seed: int = 5) -> int:
    """``sessions`` transcripts: each one of the eval transcripts under a new session id and project."""
    rng = random.Random(seed)
    sources = sorted((EVAL / "transcripts").glob("*/*.jsonl"))
    written = 0
    for n in range(sessions):
        source = sources[n % len(sources)]
        session = str(uuid.UUID(int=rng.getrandbits(128)))
        project = folder / f"{source.parent.name}-{n // len(sources)}"
        project.mkdir(parents=True, exist_ok=True)
        out = []
        for line in source.read_text().splitlines():
            if not line.strip():
                continue
            record = json.loads(line)
            if "sessionId" in record:
                record["sessionId"] = session
            if "uuid" in record:
                record["uuid"] = str(uuid.UUID(int=rng.getrandbits(128)))
            _mark(record.get("message"), f" (session {n})")  # every exchange's text its own: no vector reused
            out.append(json.dumps(record))
        (project / f"{session}.jsonl").write_text("\n".join(out) + "\n")
        written += 1
    return written


def _mark(message: object, marker: str) -> None:
    if not isinstance(message, dict):
        return
    content = message.get("content")
    if isinstance(content, str):
        message["content"] = content + marker
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                block["text"] = block.get("text", "") + marker


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=("memory", "transcripts"))
    parser.add_argument("out", type=Path)
    parser.add_argument("--observations", type=int, default=20_000)
    parser.add_argument("--sessions", type=int, default=300)
    args = parser.parse_args(argv)
    if args.kind == "memory":
        args.out.write_text("\n".join(memory_lines(args.observations)) + "\n")
    else:
        write_transcripts(args.out, args.sessions)
    return 0


if __name__ == "__main__":
    sys.exit(main())
