"""Semantic search of the history: vectors in the index, hybrid search, and the lexical fallback
(the encoder itself is tested in plugins/pao_embeddings).

Marked ``embeddings``: deselected when the extra's model wheel is not installed (see
conftest.py); with it installed these tests run and a broken extra fails them.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest
from history_support import eval_transcripts, pao, pao_json, serve

from pao_core.plugins import load_config
from pao_core.plugins import build_plugins

from pao_embeddings import model as embeddings

pytestmark = pytest.mark.embeddings

PARAPHRASE = "my loaf comes out dense and gluey in the middle"
"""Shares no content word with the sourdough sessions of the eval corpus (kitchen project)."""
OUT_OF_DOMAIN = ("plan a three-day hiking trip in the Alps", "what wine goes with roast lamb", "knit a wool sweater with a cable pattern")
GREENHOUSE = (
    "the tomato seedlings in the greenhouse wilt every afternoon once the sun hits the glass",
    "Afternoon wilting under glass is heat stress: open the roof vents at 24 °C, add 30 % shade cloth and water"
    " at dawn so the root ball is moist before the heat.",
)


@pytest.fixture(scope="module")
def semantic_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A pao home whose index holds the eval corpus with vectors (embedded once per module)."""
    root = tmp_path_factory.mktemp("semantic")
    (root / "home").mkdir()
    env = _environment(root, semantic=True)
    shutil.copytree(eval_transcripts(), root / "projects")
    done = pao(env, "history", "index", str(root / "projects"), timeout=600)
    assert "embedded 144 exchanges" in done.stdout
    return env


def _environment(root: Path, *, semantic: bool) -> dict[str, str]:
    import os

    config = root / f"config-{semantic}.toml"
    config.write_text(f"[backends.history]\nsemantic = {str(semantic).lower()}\n")
    env = {key: value for key, value in os.environ.items() if key not in ("PAO_HISTORY_URL", "PAO_HISTORY_TOKEN")}
    return {
        **env,
        "PAO_HOME": str(root / "pao-home"),
        "HOME": str(root / "home"),
        "XDG_CONFIG_HOME": str(root / "home" / ".config"),
        "PAO_LOAD_PLUGINS": "pao-historyworker",
        "PAO_CONFIG": str(config),
    }


def history_backend(env: dict[str, str]):
    config = load_config(env)
    return next(b for b in build_plugins(env).memory_backends(config) if b.name == "history")


def search(env: dict[str, str], topic: str, limit: int = 10):
    return history_backend(env).search(topic, limit, time.monotonic() + 10)


def test_indexing_embeds_every_exchange_once_and_stats_say_so(semantic_env):
    counts = pao_json(semantic_env, "history", "stats")
    assert counts["exchanges"] == 144 and counts["vectors"] == 144
    assert counts["semantic_search"] == "semantic + lexical (all-MiniLM-L6-v2)" and counts["vector_model"].startswith("all-MiniLM-L6-v2")
    again = pao_json(semantic_env, "history", "index", str(Path(semantic_env["PAO_HOME"]).parent / "projects"))
    assert again["exchanges_embedded"] == 0 and again["files_read"] == 0


def test_a_paraphrase_that_lexical_search_misses_is_found(semantic_env):
    lexical = _environment(Path(semantic_env["PAO_HOME"]).parent, semantic=False)
    assert search(lexical, PARAPHRASE) == []
    items = search(semantic_env, PARAPHRASE)
    assert items and items[0].meta["project"] == "/Users/sam/code/kitchen"
    assert [item.rank for item in items] == list(range(1, len(items) + 1))
    assert all(a.score >= b.score for a, b in zip(items, items[1:]))


def test_keyword_topics_keep_their_lexical_hit_first(semantic_env):
    items = search(semantic_env, "fix the notarization failure in the Mac DMG build")
    assert items and items[0].meta["project"] == "/Users/sam/code/driftnote"
    assert "notari" in items[0].text.lower()


@pytest.mark.parametrize("topic", OUT_OF_DOMAIN)
def test_out_of_domain_topics_still_find_nothing(semantic_env, topic):
    assert search(semantic_env, topic) == []


def test_the_server_searches_with_vectors_too(semantic_env):
    local = [item.id for item in search(semantic_env, PARAPHRASE)]
    for url in serve(semantic_env):
        remote = history_backend({**semantic_env, "PAO_HISTORY_URL": url})
        assert [item.id for item in remote.search(PARAPHRASE, 10, time.monotonic() + 10)] == local


@pytest.fixture
def missing_extra(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The real import check, made to look for a module that is not installed."""
    monkeypatch.setattr(embeddings, "REQUIRED_MODULES", (*embeddings.REQUIRED_MODULES, "pao_no_such_module"))
    embeddings.available.cache_clear()
    yield
    embeddings.available.cache_clear()


def test_without_the_extra_search_is_lexical_and_stats_say_why(semantic_env, missing_extra):
    from pao_historyworker.index import connect, stats

    assert not embeddings.available()
    assert search(semantic_env, PARAPHRASE) == []
    assert search(semantic_env, "fix the notarization failure in the Mac DMG build")
    index = Path(semantic_env["PAO_HOME"]) / "history.sqlite3"
    conn = connect(index)
    try:
        state = stats(conn, index)["semantic_search"]
    finally:
        conn.close()
    assert state.startswith("lexical only: pao_no_such_module not installed")


def _session(path: Path, session: str, prompt: str, reply: str) -> None:
    lines = []
    for kind, uuid, text in (("user", f"{session}-u", prompt), ("assistant", f"{session}-a", reply)):
        lines.append(json.dumps({
            "type": kind, "uuid": uuid, "parentUuid": None, "sessionId": session,
            "timestamp": "2026-05-01T08:00:00.000Z", "cwd": "/Users/sam/code/greenhouse", "gitBranch": "main",
            "message": {"role": kind, "content": text},
        }))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def test_new_exchanges_are_embedded_incrementally_and_searches_see_them(tmp_path):
    (tmp_path / "home").mkdir()
    env = _environment(tmp_path, semantic=True)
    projects = tmp_path / "projects"
    _session(projects / "-Users-sam-code-greenhouse" / "s1.jsonl", "s1", "which pots drain best for basil", "Terracotta.")
    first = pao_json(env, "history", "index", str(projects))
    assert first["exchanges_embedded"] == 1
    backend = history_backend(env)
    topic = "my young plants droop in the hot glasshouse after midday"
    assert backend.search(topic, 10, time.monotonic() + 10) == []  # caches this index's vectors in this process
    _session(projects / "-Users-sam-code-greenhouse" / "s2.jsonl", "s2", *GREENHOUSE)
    second = pao_json(env, "history", "index", str(projects))
    assert second["exchanges_added"] == 1 and second["exchanges_embedded"] == 1
    assert pao(env, "history", "index", str(projects)).stdout.endswith(" is up to date: nothing new in 2 transcript files\n")
    found = backend.search(topic, 10, time.monotonic() + 10)
    assert [item.meta["session_id"] for item in found] == ["s2"]
    (projects / "-Users-sam-code-greenhouse" / "s2.jsonl").unlink()
    pao(env, "history", "index", str(projects))
    assert backend.search(topic, 10, time.monotonic() + 10) == []
    assert pao_json(env, "history", "stats")["vectors"] == 1


def test_a_broken_model_costs_the_vectors_not_the_lexical_hits(semantic_env, tmp_path, monkeypatch):
    from pao_historyworker.index import connect, stats

    (tmp_path / "model.safetensors").write_bytes(b"\0" * 64)
    (tmp_path / "tokenizer.json").write_text("{}")
    monkeypatch.setattr(embeddings, "model_dir", lambda: tmp_path)
    monkeypatch.setattr(embeddings, "_shared", None)  # this process's encoder: loaded again, from the broken files
    assert search(semantic_env, PARAPHRASE) == []
    assert search(semantic_env, "fix the notarization failure in the Mac DMG build")
    index = Path(semantic_env["PAO_HOME"]) / "history.sqlite3"
    conn = connect(index)
    try:
        assert stats(conn, index)["semantic_search"].startswith("lexical only: the model is broken (cannot load all-MiniLM-L6-v2")
    finally:
        conn.close()


def test_a_slow_model_load_costs_the_vectors_not_the_deadline(semantic_env, monkeypatch):
    """On a loaded machine the first model load of a process can outlast the gather deadline:
    the search then answers in time with its lexical hits, and the load goes on for later ones."""
    import threading

    release = threading.Event()
    real_load = embeddings.Encoder.load

    def slow_load(folder=None):
        release.wait(60)
        return real_load(folder)

    monkeypatch.setattr(embeddings.Encoder, "load", staticmethod(slow_load))
    monkeypatch.setattr(embeddings, "_shared", None)
    backend = history_backend(semantic_env)
    started = time.monotonic()
    keyword = backend.search("fix the notarization failure in the Mac DMG build", 10, started + 1.5)
    assert time.monotonic() - started < 1.5
    assert keyword and keyword[0].meta["project"] == "/Users/sam/code/driftnote"
    assert backend.search(PARAPHRASE, 10, time.monotonic() + 0.5) == []  # its vector is not ready yet
    release.set()
    found = backend.search(PARAPHRASE, 10, time.monotonic() + 60)
    assert found and found[0].meta["project"] == "/Users/sam/code/kitchen"


def test_an_index_without_vectors_never_loads_the_model(tmp_path, monkeypatch):
    """Indexed with ``semantic = false``, searched with it on: lexical hits, no model load, no topic embedding."""
    (tmp_path / "home").mkdir()
    projects = tmp_path / "projects"
    _session(projects / "-Users-sam-code-greenhouse" / "s1.jsonl", "s1", "which pots drain best for basil", "Terracotta.")
    assert pao_json(_environment(tmp_path, semantic=False), "history", "index", str(projects))["exchanges_embedded"] == 0

    def refuse(folder=None):
        raise AssertionError("the model was loaded to search an index without vectors")

    monkeypatch.setattr(embeddings.Encoder, "load", staticmethod(refuse))
    monkeypatch.setattr(embeddings, "_shared", None)
    found = search(_environment(tmp_path, semantic=True), "which pots drain best for basil")
    assert [item.meta["session_id"] for item in found] == ["s1"]
