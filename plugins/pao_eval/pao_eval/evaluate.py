"""Measured retrieval quality: run a labelled corpus through the real pipeline and score it.

A corpus has the layout of the project's ``eval`` folder: ``memory.jsonl`` (MCP
memory-server file), ``transcripts/`` (Claude Code sessions), ``queries.jsonl``,
``split.json``, ``labels.jsonl`` and optionally ``hazards.jsonl``,
``contradictions.jsonl`` and ``near_duplicates.jsonl``.

:func:`load_stores` has each plugin fill its throwaway store under a temporary
``PAO_HOME`` (the ``pao_load_corpus`` hook);
:func:`run_queries` briefs every query of a split with :func:`pao_core.gather.brief`;
:func:`score` is the only reader of ``labels.jsonl``. Definitions are the corpus
README's: precision = (relevant + partially relevant) / items, per in-domain query
that returned items; recall@10 = relevant items among the first ten / min(10,
relevant items that exist), an exchange counting for every labelled line it carries
(``meta["uuids"]``); out-of-domain items = items per out-of-domain control query.
"""

from __future__ import annotations

import contextlib
import json
import re
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import attrs

from pao_core.errors import PaoError
from pao_eval.conversations import as_memory, evidence_scores, is_conversational
from pao_eval.records import CorpusError, Query, QueryRun

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_core.models import Briefing, MemoryItem
    from pao_core.plugins import Plugins

ORIGINAL = {"precision": 0.574, "ood_items": 4.0, "chars": 4816.0, "items": 11.5, "latency_ms": 586.0}
"""The original system's reported figures (precision judged by a model)."""

LEXICAL_SWITCHES = ("longterm", "history")
"""The backends whose ``semantic`` option ``pao eval --lexical`` turns off."""

TARGETS = {"precision": 0.85, "recall_at_10": 0.60, "ood_items": 0.5, "latency_p50_ms": 50.0}


def _jsonl(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CorpusError(f"{path}: missing") from None
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except ValueError as exc:
            raise CorpusError(f"{path}:{number}: not JSON ({exc})") from None
    return rows


def load_queries(corpus: Path, split: str) -> list[Query]:
    """The queries of ``split`` (``split.json``), in the file's order."""
    try:
        splits = json.loads((corpus / "split.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CorpusError(f"{corpus / 'split.json'}: missing") from None
    except ValueError as exc:
        raise CorpusError(f"{corpus / 'split.json'}: not JSON ({exc})") from None
    if split not in splits:
        raise CorpusError(f"{corpus / 'split.json'}: no split {split!r} (has {', '.join(sorted(splits))})")
    wanted = set(splits[split])
    queries = [
        Query(row["qid"], row["topic"], row.get("kind", "in-domain"), row.get("domain"), row.get("subtopic"),
              tuple(row.get("evidence", ())))
        for row in _jsonl(corpus / "queries.jsonl")
        if row.get("qid") in wanted
    ]
    if not queries:
        raise CorpusError(f"{corpus}: split {split!r} names no query of queries.jsonl")
    return queries


def load_stores(corpus: Path, config: PaoConfig, plugins: Plugins) -> list[str]:
    """Each plugin loads its part of the corpus (``pao_load_corpus``); one line per part loaded."""
    before = len(plugins.failures)
    loaded = plugins.load_corpus(corpus, config)
    for failure in plugins.failures[before:]:
        if failure.stage == "pao_load_corpus":
            raise CorpusError(f"{corpus}: {failure.plugin} could not load its part: {failure.error}")
    return loaded


def run_queries(
    queries: Sequence[Query],
    *,
    config: PaoConfig,
    plugins: Plugins,
    backends: Sequence[str] | None = None,
    repeat: int = 3,
) -> list[QueryRun]:
    """Brief every query through the real pipeline (after one unmeasured warm-up).

    Each query runs ``repeat`` times; its latency is the median of those runs (the
    machine may be busy with other work), and its last briefing is scored.
    """
    from pao_core.gather import brief  # loaded on use, not at start-up

    available = plugins.memory_backends(config)
    if backends is not None:
        unknown = set(backends) - {b.name for b in available}
        if unknown:
            names = ", ".join(sorted(b.name for b in available)) or "none"
            raise PaoError(f"--backends: no backend named {', '.join(sorted(unknown))} (configured: {names})")
        available = [b for b in available if b.name in backends]
    try:
        brief(queries[0].topic, config=config, plugins=plugins, backends=available)
        runs = []
        for query in queries:
            timings = []
            for _ in range(max(1, repeat)):
                started = time.perf_counter()
                briefing = brief(query.topic, config=config, plugins=plugins, backends=available)
                timings.append((time.perf_counter() - started) * 1000)
            runs.append(QueryRun(query, briefing, round(statistics.median(timings), 2)))
    finally:
        for backend in available:  # the backends' close step: made here, closed here
            with contextlib.suppress(Exception):
                backend.close()
    return runs


def covered_ids(item: MemoryItem) -> list[str]:
    """The corpus ids an item stands for: its own, and every line of an exchange."""
    return list(dict.fromkeys([item.id, *(f"msg:{item.meta.get('session_id')}:{u}" for u in item.meta.get("uuids", ()))]))


def score(runs: Sequence[QueryRun], corpus: Path) -> dict[str, Any]:
    """Every figure of the report; the one place ``labels.jsonl`` is read."""
    labels = {row["id"]: row for row in _jsonl(corpus / "labels.jsonl")}
    per_subtopic: dict[str, int] = {}
    for row in labels.values():
        per_subtopic[row["subtopic"]] = per_subtopic.get(row["subtopic"], 0) + 1
    precisions, recalls, ood, rows = [], [], [], []
    for run in runs:
        query, items = run.query, run.briefing.items
        row: dict[str, Any] = {"qid": query.qid, "kind": query.kind, "topic": query.topic, "items": len(items),
                               "chars": len(run.briefing.markdown), "latency_ms": run.latency_ms,
                               "ids": [covered_ids(item) for item in items]}
        if query.kind == "ood":
            ood.append(len(items))
        else:
            judged = [labels.get(item.id, {}) for item in items]
            hits = sum(1 for label in judged if label.get("domain") == query.domain)
            if items:
                precisions.append(hits / len(items))
                row["precision"] = round(hits / len(items), 3)
            relevant = {i for item in items[:10] for i in covered_ids(item)
                        if labels.get(i, {}).get("subtopic") == query.subtopic}
            existing = min(10, per_subtopic.get(query.subtopic or "", 0)) or 1
            recalls.append(min(1.0, len(relevant) / existing))
            row["recall_at_10"] = round(recalls[-1], 3)
        rows.append(row)
    latencies = [run.latency_ms for run in runs]
    return {
        "queries": len(runs),
        "precision": _mean(precisions),
        "recall_at_10": _mean(recalls),
        "ood_items": _mean(ood),
        "chars": _mean([len(run.briefing.markdown) for run in runs]),
        "items": _mean([len(run.briefing.items) for run in runs]),
        "latency_p50_ms": round(statistics.median(latencies), 2),
        "latency_max_ms": round(max(latencies), 2),
        "per_query": rows,
        **hazard_checks(runs, corpus),
        **consistency_checks(runs, corpus),
    }


def _mean(values: Sequence[float]) -> float:
    return round(statistics.fmean(values), 4) if values else 0.0


_SECRETISH = re.compile(r"[A-Za-z0-9_+/=-]{12,}")


def _secret_tokens(text: str) -> set[str]:
    """Long tokens with letters and digits: the shape of keys, tokens and passwords."""
    return {t for t in _SECRETISH.findall(text)
            if sum(c.isdigit() for c in t) >= 2 and sum(c.isalpha() for c in t) >= 2 and not re.fullmatch(r"[\d-]+", t)}


def _corpus_texts(corpus: Path) -> dict[str, str]:
    texts: dict[str, str] = {}
    for row in _jsonl(corpus / "memory.jsonl"):
        for position, text in enumerate(row.get("observations", ())):
            texts[f"obs:{row['name']}#{position}"] = text
    for path in sorted((corpus / "transcripts").glob("*/*.jsonl")):
        for row in _jsonl(path):
            content = (row.get("message") or {}).get("content")
            if isinstance(content, list):
                content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
            if isinstance(content, str) and row.get("uuid"):
                texts[f"msg:{row.get('sessionId')}:{row['uuid']}"] = content
    return texts


def hazard_checks(runs: Sequence[QueryRun], corpus: Path) -> dict[str, Any]:
    """ESC bytes and secret-shaped tokens of the corpus's secret items found in any briefing."""
    path = corpus / "hazards.jsonl"
    esc = sum(1 for run in runs if "\x1b" in run.briefing.markdown)
    if not path.exists():
        return {"briefings_with_esc": esc}
    texts = _corpus_texts(corpus)
    hazards = _jsonl(path)
    secrets = set().union(*(_secret_tokens(texts.get(h["id"], "")) for h in hazards if h.get("hazard") == "secret"))
    leaked = sorted({s for run in runs for s in secrets if s in run.briefing.markdown})
    shown = {h["id"] for h in hazards} & {i for run in runs for item in run.briefing.items for i in covered_ids(item)}
    return {"briefings_with_esc": esc, "secrets_leaked": len(leaked), "hazard_items_shown": len(shown)}


def consistency_checks(runs: Sequence[QueryRun], corpus: Path) -> dict[str, Any]:
    """Supersession and duplicate handling where the corpus marks pairs and groups."""
    result: dict[str, Any] = {}
    pairs_path, groups_path = corpus / "contradictions.jsonl", corpus / "near_duplicates.jsonl"
    if pairs_path.exists():
        both = ordered = 0
        for pair in _jsonl(pairs_path):
            for run in runs:
                ids = [item.id for item in run.briefing.items]
                if pair["newer"] in ids and pair["older"] in ids:
                    both += 1
                    older = run.briefing.items[ids.index(pair["older"])]
                    ordered += ids.index(pair["newer"]) < ids.index(pair["older"]) and bool(older.fusion.get("earlier"))
        result["superseded_pairs_shown"] = both
        result["superseded_pairs_ordered"] = ordered
    if groups_path.exists():
        repeated = 0
        for group in _jsonl(groups_path):
            members = set(group["ids"])
            repeated += sum(1 for run in runs if len(members & {item.id for item in run.briefing.items}) > 1)
        result["duplicate_groups_repeated"] = repeated
    return result


def evaluate(
    corpus: Path,
    *,
    split: str,
    config: PaoConfig,
    plugins: Plugins,
    backends: Sequence[str] | None = None,
    home: Path,
    repeat: int = 3,
    semantic: bool = True,
) -> dict[str, Any]:
    """Load the corpus into stores under ``home``, brief the split, score it (``semantic`` False: the
    stores' lexical search alone, their ``semantic = false``)."""
    corpus = corpus.expanduser()
    if not corpus.is_dir():
        raise CorpusError(f"{corpus}: not a folder")
    queries = load_queries(corpus, split)
    lexical_only = {name: {"semantic": False} for name in LEXICAL_SWITCHES}
    eval_config = attrs.evolve(config, home=home, backends={} if semantic else lexical_only)
    sessions = as_memory(corpus, home / "corpus", _jsonl) if is_conversational(corpus) else None
    loaded = load_stores(home / "corpus" if sessions is not None else corpus, eval_config, plugins)
    runs = run_queries(queries, config=eval_config, plugins=plugins, backends=backends, repeat=repeat)
    report = evidence_scores(runs, sessions) if sessions is not None else score(runs, corpus)
    report["semantic"] = semantic
    used = backends if backends is not None else [b.name for b in plugins.memory_backends(eval_config)]
    return {"corpus": str(corpus), "split": split, "backends": list(used), "loaded": loaded, **report}


def comparison_rows(report: Mapping[str, Any]) -> list[tuple[str, str, str, str]]:
    """(figure, pao, original system, target) rows for the printed table."""
    def pct(value: float) -> str:
        return f"{value * 100:.1f}%"

    return [
        ("precision", pct(report["precision"]), pct(ORIGINAL["precision"]), ">= 85%"),
        ("recall@10", pct(report["recall_at_10"]), "not reported", ">= 60%"),
        ("out-of-domain items per control query", f"{report['ood_items']:.2f}", f"{ORIGINAL['ood_items']:.0f}",
         "<= 0.5"),
        ("briefing characters", f"{report['chars']:,.0f}", f"{ORIGINAL['chars']:,.0f}", "fewer"),
        ("items per briefing", f"{report['items']:.1f}", f"{ORIGINAL['items']:.1f}", "fewer"),
        ("latency p50 (in-process brief)", f"{report['latency_p50_ms']:.1f} ms", f"{ORIGINAL['latency_ms']:.0f} ms",
         "<= 50 ms"),
    ]


def evidence_rows(report: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(figure, pao) rows of a conversational corpus's report."""
    rows = [("evidence recall@10", f"{report['evidence_recall_at_10'] * 100:.1f}%")]
    rows += [(f"  {kind}", f"{value * 100:.1f}%") for kind, value in report["by_kind"].items()]
    rows += [("items per briefing", f"{report['items']:.1f}"),
             ("latency p50 (in-process brief)", f"{report['latency_p50_ms']:.1f} ms")]
    return rows
