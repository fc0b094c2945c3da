"""``pao eval``: the metric computation, the report, and the product's acceptance targets.

The corpus under tests/data/eval is the project's labelled fixture (a copy of the
shared eval corpus); the tests run on a copy of it in a temporary folder.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest

from pao_core import hookimpl
from pao_core.plugins import load_config
from pao_eval.evaluate import CorpusError, Query, QueryRun, load_stores, score
from pao_core.models import Briefing, MemoryItem
from pao_core.plugins import build_plugins

DATA = Path(__file__).resolve().parents[3] / "tests" / "data"
"""The project's labelled corpora, shared with the root tests and the benches."""
CORPUS = DATA / "eval"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    copy = tmp_path / "eval"
    shutil.copytree(CORPUS, copy)
    return copy


def _labels(corpus: Path) -> dict[str, dict]:
    return {row["id"]: row for row in map(json.loads, (corpus / "labels.jsonl").read_text().splitlines())}


def _run(query: Query, items: list[MemoryItem], markdown: str = "x" * 100) -> QueryRun:
    briefing = Briefing(topic=query.topic, markdown=markdown, items=tuple(items), backends={}, elapsed_ms=1.0)
    return QueryRun(query, briefing, 10.0)


def _obs(ident: str) -> MemoryItem:
    return MemoryItem("longterm", ident, ident.split("#")[0][4:], "text", kind="observation")


EVAL_TIMEOUT = 600
"""Seconds a `pao eval` run may take: loading a corpus embeds its observations and exchanges, which on a
fresh machine (no vector cache yet) with other work running takes minutes, not the 60 s of other commands."""


def test_metrics_follow_the_corpus_definitions(corpus: Path) -> None:
    labels = _labels(corpus)
    relevant = [i for i, row in labels.items() if row["subtopic"] == "mac-notarization" and i.startswith("obs:")]
    partial = next(i for i, row in labels.items() if row["domain"] == "macapp" and row["subtopic"] != "mac-notarization")
    wrong = next(i for i, row in labels.items() if row["domain"] == "sourdough")
    lines = [i for i, row in labels.items() if row["subtopic"] == "mac-notarization" and i.startswith("msg:")]
    session, first = lines[0].split(":")[1], lines[0].split(":")[2]
    same_session = [i.split(":")[2] for i in lines if i.split(":")[1] == session]
    exchange = MemoryItem("history", f"msg:{session}:{first}", "driftnote", "User: ...", kind="exchange",
                          timestamp=dt.datetime(2026, 1, 14, tzinfo=dt.timezone.utc),
                          meta={"session_id": session, "uuids": same_session[:3]})
    mac = Query("q15", "fix the notarization failure", "in-domain", "macapp", "mac-notarization")
    bread = Query("q39", "Gus smells like acetone", "in-domain", "sourdough", "bread-starter")
    quiet = Query("q99", "no answer at all", "in-domain", "sourdough", "bread-starter")
    ood = Query("q06", "drip irrigation", "ood", None, None)
    runs = [
        _run(mac, [_obs(relevant[0]), _obs(relevant[1]), _obs(partial), _obs(wrong), exchange], "m" * 300),
        _run(bread, [_obs(wrong)], "b" * 100),
        _run(quiet, [], "q" * 200),
        _run(ood, [_obs(wrong), _obs(partial)], "o" * 400),
    ]
    report = score(runs, corpus)
    # Precision: mac 4 of 5 in the domain; bread 1 of 1; the empty answer is not averaged.
    assert report["precision"] == pytest.approx((4 / 5 + 1) / 2, abs=1e-4)
    # Recall@10: mac 2 observations + every labelled line of the exchange, over min(10, existing).
    mac_relevant = 2 + len(same_session[:3])
    bread_relevant = 1 if labels[wrong]["subtopic"] == "bread-starter" else 0
    assert report["per_query"][0]["recall_at_10"] == pytest.approx(mac_relevant / 10, abs=1e-3)
    assert report["recall_at_10"] == pytest.approx((mac_relevant / 10 + bread_relevant / 10 + 0) / 3, abs=1e-3)
    assert report["ood_items"] == 2
    assert report["items"] == 2 and report["chars"] == 250
    assert report["latency_p50_ms"] == 10.0


def test_supersession_and_duplicate_checks(corpus: Path) -> None:
    mac = Query("q15", "x", "in-domain", "macapp", "mac-notarization")
    pair = json.loads((corpus / "contradictions.jsonl").read_text().splitlines()[0])
    newer = MemoryItem("longterm", pair["newer"], "e", "t", meta={})
    older = MemoryItem("longterm", pair["older"], "e", "t", fusion={"earlier": True})
    twin = [json.loads(line)["ids"] for line in (corpus / "near_duplicates.jsonl").read_text().splitlines()][0]
    report = score([_run(mac, [newer, older]), _run(mac, [older, newer]), _run(mac, [_obs(twin[0]), _obs(twin[1])])],
                   corpus)
    assert report["superseded_pairs_shown"] == 2 and report["superseded_pairs_ordered"] == 1
    assert report["duplicate_groups_repeated"] == 1


def test_leak_check_finds_a_secret_and_an_escape(corpus: Path) -> None:
    mac = Query("q15", "x", "in-domain", "macapp", "mac-notarization")
    leaky = _run(mac, [], "key AKIAQX7M3RZ2FAKE9KDP here \x1b[31m")
    report = score([leaky], corpus)
    assert report["secrets_leaked"] == 1 and report["briefings_with_esc"] == 1


def test_pao_eval_reports_beside_the_original_system(pao, corpus: Path) -> None:
    done = pao("eval", str(corpus), "--split", "dev", "--repeat", "1", timeout=EVAL_TIMEOUT)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for figure in ("precision", "recall@10", "out-of-domain items", "briefing characters", "items per briefing",
                   "latency p50"):
        assert figure in out
    assert "57.4%" in out and "4,816" in out and "11.5" in out and "586 ms" in out


def test_dev_split_meets_the_acceptance_targets(pao, corpus: Path) -> None:
    """The product's acceptance criteria (issue 5): precision, recall@10, out-of-domain, leaks."""
    done = pao("eval", str(corpus), "--split", "dev", "--json", "--repeat", "1", timeout=EVAL_TIMEOUT)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["backends"] == ["history", "longterm"] and report["queries"] == 24
    # The report's figures are what its own per-query ids say they are.
    labels = _labels(corpus)
    queries = {row["qid"]: row for row in map(json.loads, (corpus / "queries.jsonl").read_text().splitlines())}
    precisions = []
    for row in report["per_query"]:
        query = queries[row["qid"]]
        if query["kind"] != "ood" and row["ids"]:
            precisions.append(sum(labels[ids[0]]["domain"] == query["domain"] for ids in row["ids"]) / len(row["ids"]))
    assert report["precision"] == pytest.approx(sum(precisions) / len(precisions), abs=1e-3)
    assert report["precision"] >= 0.85
    assert report["recall_at_10"] >= 0.60
    assert report["ood_items"] <= 0.5
    assert report["secrets_leaked"] == 0 and report["briefings_with_esc"] == 0
    assert report["chars"] < 4816 and report["items"] < 11.5


def test_eval_subsets_of_backends_and_bad_input(pao, corpus: Path) -> None:
    done = pao("eval", str(corpus), "--backends", "longterm", "--json", "--repeat", "1", timeout=EVAL_TIMEOUT)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["backends"] == ["longterm"]
    assert all(ident.startswith("obs:") for row in report["per_query"] for ids in row["ids"] for ident in ids)
    for args, needle in (
        (["eval", str(corpus / "nope")], "not a folder"),
        (["eval", str(corpus), "--split", "test"], "no split 'test'"),
        (["eval", str(corpus), "--backends", "bogus"], "no backend named bogus"),
    ):
        bad = pao(*args)
        assert bad.returncode != 0 and needle in bad.stderr and bad.stderr.count("\n") == 1, bad.stderr


def test_second_corpus_scores_through_the_same_scorer(pao, tmp_path: Path) -> None:
    """tests/data/eval2 (another owner): the same command and scorer run on it, and the shipped
    knobs meet the generalisation targets there (how each corpus's fit does on the other:
    benches/retrieval_fit.py, docs/benchmarks.md). Its observations are loaded with their
    vectors, as `pao memory import` does."""
    corpus = tmp_path / "eval2"
    shutil.copytree(DATA / "eval2", corpus)
    done = pao("eval", str(corpus), "--split", "all", "--json", "--repeat", "1", timeout=EVAL_TIMEOUT)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["queries"] == 48 and report["backends"] == ["history", "longterm"]
    assert any(line.startswith("memory.jsonl:") and line.endswith("(semantic + lexical)") for line in report["loaded"])
    # issue 31's targets on held-out memory (measured 0.971 / 0.780 / 0.20 at the commit that raised them)
    assert report["precision"] >= 0.90
    assert report["recall_at_10"] >= 0.75
    assert report["ood_items"] <= 0.5
    assert report["secrets_leaked"] == 0 and report["briefings_with_esc"] == 0


class CorpusLoaders:
    """Two loaders: one that loads its part, one whose part is broken."""

    def __init__(self, broken: bool) -> None:
        self.broken = broken

    @hookimpl
    def pao_load_corpus(self, corpus, config):
        if self.broken:
            raise ValueError(f"{corpus / 'notes.md'}: line 3 is not a note")
        return None if not (corpus / "memory.jsonl").exists() else "memory.jsonl: loaded by the test"


@pytest.mark.hook("pao_load_corpus")
def test_each_plugin_loads_its_part_and_a_broken_part_fails_the_eval(corpus: Path, tmp_path: Path) -> None:
    plugins = build_plugins({"PAO_LOAD_PLUGINS": ""})
    plugins.manager.register(CorpusLoaders(broken=False), name="loader")
    assert load_stores(corpus, load_config(), plugins) == ["memory.jsonl: loaded by the test"]
    assert load_stores(tmp_path, load_config(), plugins) == []  # nothing of its in this corpus
    plugins.manager.register(CorpusLoaders(broken=True), name="broken-loader")
    with pytest.raises(CorpusError, match="broken-loader could not load its part: .*line 3 is not a note"):
        load_stores(corpus, load_config(), plugins)
