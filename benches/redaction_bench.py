#!/usr/bin/env python3
"""Redaction: coverage of gitleaks' default rules, and its cost per memory text.

* coverage: one sample per gitleaks v8.30.1 rule (tests/data/secrets, see
  benches/secret_samples.py); a rule counts as covered when no 16 characters in a row
  of its secret's value survive ``redact_secrets``;
* shapes: the hand-written samples of tests/data/secrets/shapes.jsonl (issue 28's shapes
  and their kind, some held out from the rule writing, by round) redacted, and the prose
  beside them kept;
* cost: ``redact_secrets(strip_controls(text))`` over every text of the eval corpus
  (tests/data/eval), uncached, median of 7 passes.

    .venv/bin/python benches/redaction_bench.py [--json]

Runs on any revision that has ``pao_core.sanitize.redact_secrets`` (to compare before/after).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def leaked(secret: str, out: str) -> bool:
    value = max(secret.split(), key=len)
    return value in out if len(value) < 16 else any(value[i:i + 16] in out for i in range(len(value) - 15))


def main(argv: list[str]) -> int:
    from pao_eval.evaluate import _corpus_texts
    from pao_core.sanitize import redact_secrets, strip_controls

    samples = [json.loads(line) for line in (ROOT / "tests/data/secrets/gitleaks-v8.30.1.jsonl").read_text().splitlines()]
    covered = sum(not leaked(s["secret"], redact_secrets(s["text"])) for s in samples)
    shapes = [json.loads(line) for line in (ROOT / "tests/data/secrets/shapes.jsonl").read_text().splitlines()]
    shaped = [row for row in shapes if row["secret"] is not None]
    shapes_covered = [row for row in shaped if not leaked(row["secret"], redact_secrets(row["text"]))]
    heldout = [row for row in shaped if row.get("heldout")]
    prose_kept = sum(redact_secrets(row["text"]) == row["text"] for row in shapes if row["secret"] is None)
    texts = list(_corpus_texts(ROOT / "tests" / "data" / "eval").values())
    redact_secrets("warm-up: load the rules")
    runs = []
    for _ in range(7):
        started = time.perf_counter()
        for text in texts:
            redact_secrets(strip_controls(text))
        runs.append((time.perf_counter() - started) * 1000)
    result = {
        "gitleaks_rules_covered": covered, "gitleaks_rules": len(samples),
        "shapes_covered": len(shapes_covered), "shapes": len(shaped),
        "heldout_covered": sum(row in shapes_covered for row in heldout), "heldout": len(heldout),
        "prose_kept": prose_kept, "prose": len(shapes) - len(shaped),
        "corpus_redactions": sum(redact_secrets(text).count("[redacted]") for text in texts), "texts": len(texts),
        "chars": sum(map(len, texts)), "pass_ms_median": round(statistics.median(runs), 2),
        "us_per_text": round(statistics.median(runs) * 1000 / len(texts), 1),
    }
    if "--json" in argv:
        print(json.dumps(result, indent=2))
    else:
        print(f"gitleaks v8.30.1 rules covered: {covered}/{len(samples)}; shapes {len(shapes_covered)}/{len(shaped)} "
              f"(held out {result['heldout_covered']}/{len(heldout)}), prose kept {prose_kept}/{result['prose']}; "
              f"{result['corpus_redactions']} redactions in the eval corpus; "
              f"{result['us_per_text']} us per text ({len(texts)} texts, median of 7 passes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
