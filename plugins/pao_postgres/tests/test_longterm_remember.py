"""The longterm store is writable (``WritableMemory.remember``) on both dialects: provenance kept
with the observation, repeats stored once, and the next briefing on the topic shows who wrote it."""

from __future__ import annotations

import datetime as dt
import sqlite3
import threading
import time

from pao_core.models import Provenance

from longterm_helpers import Longterm, longterm_backend

WHEN = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)


def test_remember_keeps_provenance_and_stores_a_repeat_once(longterm: Longterm) -> None:
    backend = longterm_backend()
    provenance = Provenance("api-2", "5f0c2a9e-1111-2222-3333-444455556666", WHEN)
    before = dt.datetime.now(dt.timezone.utc)
    first = backend.remember("driftnote", "notarize.sh must sign the XPC services inside-out", provenance, time.monotonic() + 10)
    assert first.created and first.item.id == "obs:driftnote#0" and first.item.backend == "longterm"
    recorded = dt.datetime.fromisoformat(first.item.meta["provenance"].pop("recorded_at"))
    assert before <= recorded <= dt.datetime.now(dt.timezone.utc)  # the store's clock, not the caller's WHEN
    assert first.item.meta["provenance"] == {"agent": "api-2", "session_id": provenance.session_id, "kept_at": None}
    later = Provenance("web", None, WHEN + dt.timedelta(days=1))
    again = backend.remember("driftnote", "  Notarize.sh must sign the XPC   services inside-out ", later, time.monotonic() + 10)
    assert not again.created and again.item.id == "obs:driftnote#0"
    assert again.item.meta["provenance"]["agent"] == "api-2"  # the first writer stays the provenance
    stats = longterm.pao_json("memory", "stats")
    assert (stats["entities"], stats["observations"]) == (1, 1)

    other = backend.remember("driftnote", "the DMG is signed after notarization", later, time.monotonic() + 10)
    assert other.created and other.item.id == "obs:driftnote#1"
    assert {key: other.item.meta["provenance"][key] for key in ("agent", "session_id")} == {"agent": "web", "session_id": None}


def test_next_briefing_shows_the_fact_with_its_provenance(longterm: Longterm) -> None:
    longterm.pao("memory", "add", "driftnote", "notarize.sh fails when the XPC services are unsigned")  # no provenance: a user's note
    backend = longterm_backend()
    provenance = Provenance("api-2", "5f0c2a9e-1111-2222-3333-444455556666", WHEN)
    backend.remember("driftnote", "notarize.sh must sign the XPC services inside-out", provenance, time.monotonic() + 10)

    briefing = longterm.pao_json("brief", "why does driftnote notarize.sh fail on the XPC services")
    item = next(i for i in briefing["items"] if i["id"] == "obs:driftnote#1")
    assert item["meta"]["provenance"]["agent"] == "api-2"
    today = dt.date.today().isoformat()  # pao's clock at write time
    assert f"remembered by agent api-2, session 5f0c2a9e, {today}" in briefing["markdown"]
    line = next(line for line in briefing["markdown"].splitlines() if "inside-out" in line)
    assert line.startswith(f"> - (remembered by agent api-2, session 5f0c2a9e, {today})"), line
    assert "remembered by" not in next(line for line in briefing["markdown"].splitlines() if "are unsigned" in line)


def test_concurrent_remembers_of_one_entity_get_distinct_positions(longterm: Longterm) -> None:
    longterm.pao("memory", "init")  # agents write to a store that exists (creating a schema is not race-free)
    backend = longterm_backend()
    results, errors = [], []

    def write(n: int) -> None:
        try:
            fact = f"build step {n} runs after codesign"
            results.append(backend.remember("pipeline", fact, Provenance(f"a{n}", None, WHEN), time.monotonic() + 30))
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert sorted(r.item.meta["position"] for r in results) == list(range(6))


def test_a_store_made_before_provenance_existed_is_still_searched(longterm: Longterm) -> None:
    longterm.pao("memory", "add", "Gus", "smells of acetone when underfed")
    if longterm.dialect == "sqlite":
        with sqlite3.connect(longterm.home / "longterm.sqlite3") as connection:
            connection.execute("DROP TABLE observations_provenance")
    else:
        import psycopg

        with psycopg.connect(longterm.url, autocommit=True) as connection:
            connection.execute(f"DROP TABLE {longterm.schema}.observations_provenance")
    found = longterm.pao_json("memory", "search", "Gus acetone")["items"]
    assert [item["id"] for item in found] == ["obs:Gus#0"]
    briefing = longterm.pao_json("brief", "Gus smells of acetone")
    assert briefing["items"][0]["id"] == "obs:Gus#0" and "provenance" not in briefing["items"][0]["meta"]
