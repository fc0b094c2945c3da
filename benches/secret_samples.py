#!/usr/bin/env python3
"""Write one sample secret per rule of a gitleaks config, for pao's redaction coverage test.

Each sample is drawn at random (seeded by the rule id, so reruns give the same file) from
the rule's own regex, checked to match it, and wrapped in a sentence. The secret is the
part gitleaks reports (the rule's secret group, else its first group, else the match).
Characters for wide classes (``.``, ``[\\s\\S]``, ``[^...]``) are drawn from letters,
digits and ``+/=``, as secrets are; repeats draw at most 30 beyond their minimum.

    git clone https://github.com/gitleaks/gitleaks && git -C gitleaks checkout v8.30.1
    .venv/bin/python benches/secret_samples.py gitleaks/config/gitleaks.toml \\
        > tests/data/secrets/gitleaks-v8.30.1.jsonl
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import string
import sys
import tomllib

try:  # the regex parser of the standard library (sre_parse before 3.11)
    from re import _constants as C  # type: ignore[attr-defined]
    from re import _parser as parser  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    import sre_constants as C  # type: ignore[no-redef]
    import sre_parse as parser  # type: ignore[no-redef]

SECRETISH = string.ascii_letters + string.digits + "+/="
PRINTABLE = string.ascii_letters + string.digits + " _-.+/=:~"
CATEGORY = {
    C.CATEGORY_DIGIT: string.digits,
    C.CATEGORY_NOT_DIGIT: string.ascii_letters,
    C.CATEGORY_WORD: string.ascii_letters + string.digits + "_",
    C.CATEGORY_NOT_WORD: " -./+=:",
    C.CATEGORY_SPACE: " ",
    C.CATEGORY_NOT_SPACE: SECRETISH,
}


def to_python(go_regex: str) -> str:
    """Go RE2 syntax to Python's; an inline ``(?i)`` anywhere makes the whole pattern case-blind
    (Python takes global flags only at the start; the samples are drawn as written anyway)."""
    regex = go_regex.replace("[[:alnum:]]", "[A-Za-z0-9]").replace(r"\z", r"\Z")
    return "(?i)" + regex.replace("(?i)", "") if "(?i)" in regex else regex


def _choices(items: list, negate: bool) -> str:
    allowed = set()
    for op, arg in items:
        if op is C.LITERAL:
            allowed.add(chr(arg))
        elif op is C.RANGE:
            allowed.update(chr(c) for c in range(arg[0], arg[1] + 1) if chr(c) in PRINTABLE + "\n\r\t")
        elif op is C.CATEGORY:
            allowed.update(CATEGORY.get(arg, ""))
    if negate or len(allowed) > 90:
        pool = [c for c in SECRETISH if c not in allowed] if negate else [c for c in SECRETISH if c in allowed]
        return "".join(pool) or SECRETISH
    return "".join(sorted(c for c in allowed if c not in "\n\r\t")) or "".join(sorted(allowed))


def generate(tree, rng: random.Random, groups: dict[int, str]) -> str:
    out = []
    for op, arg in tree:
        if op is C.LITERAL:
            out.append(chr(arg))
        elif op is C.NOT_LITERAL:
            out.append(rng.choice([c for c in SECRETISH if ord(c) != arg]))
        elif op is C.ANY:
            out.append(rng.choice(SECRETISH))
        elif op is C.IN:
            negate = bool(arg) and arg[0][0] is C.NEGATE
            out.append(rng.choice(_choices(arg[1:] if negate else arg, negate)))
        elif op is C.BRANCH:
            branches = [b for b in arg[1] if not (b.data and b.data[0][0] is C.AT)] or arg[1]
            out.append(generate(rng.choice(branches), rng, groups))
        elif op is C.SUBPATTERN:
            text = generate(arg[3], rng, groups)
            if arg[0]:
                groups[arg[0]] = text
            out.append(text)
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", None)):
            low, high, sub = arg
            high = low + 30 if high is C.MAXREPEAT else min(high, low + 30)
            out.extend(generate(sub, rng, groups) for _ in range(rng.randint(low, high)))
        elif op is C.GROUPREF:
            out.append(groups.get(arg, ""))
        # AT, ASSERT, ASSERT_NOT: nothing to emit
    return "".join(out)


def sample(rule: dict) -> dict | None:
    pattern = re.compile(to_python(rule["regex"]))
    tree = parser.parse(pattern.pattern, pattern.flags & ~re.UNICODE)
    seed = int(hashlib.sha256(rule["id"].encode()).hexdigest()[:12], 16)
    for attempt in range(200):
        rng = random.Random(seed + attempt)
        drawn = generate(tree, rng, {})
        keywords = rule.get("keywords") or []
        # gitleaks reports a rule only where one of its keywords occurs: so does the sample
        named = "" if not keywords or any(k in drawn.lower() for k in keywords) else f" ({keywords[0]})"
        text = f"note from the audit{named}: {drawn} (rotate it)"
        match = pattern.search(text)
        if match is None:
            continue
        group = rule.get("secretGroup") or (1 if pattern.groups else 0)
        secret = match.group(group) if group <= pattern.groups else match.group(0)
        if not secret:
            secret = next((g for g in match.groups() if g), match.group(0))
        return {"rule": rule["id"], "text": text, "secret": secret.strip()}
    return None


def main(argv: list[str]) -> int:
    with open(argv[0], "rb") as handle:
        config = tomllib.load(handle)
    missed = []
    for rule in config["rules"]:
        if "regex" not in rule:
            continue
        record = sample(rule)
        if record is None:
            missed.append(rule["id"])
        else:
            print(json.dumps(record))
    if missed:
        print(f"no sample for: {', '.join(missed)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
