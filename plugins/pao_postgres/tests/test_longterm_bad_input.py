"""Hostile and odd topics, through every mode on both dialects: no SQL error, no injection."""

from __future__ import annotations

import time

import pytest

from longterm_helpers import Longterm
from pao_postgres.backend import LongtermBackend
from pao_postgres.options import MODES, LongtermOptions

TOPICS = [
    "it's Sam's \"quoted\" 'topic'",
    "back\\slash \\\\ C:\\Users\\sam\\ and \\x00",
    "100% of the %_% rows",
    "___",
    "%%%",
    "a & b | !c : d * (e) <-> f <2> g:* !!",
    "'; DROP TABLE observations; --",
    "\" OR 1=1 --",
    "NEAR(fts5 query) AND content: * ^start",
    "nul\x00byte in the\x00middle",
    "x" * 10_000,
    "word " * 2_000,
    "Sauerteig riecht nach Nagellackentferner, was tun?",
    "パン生地がべたつく",
    "хлеб липкий внутри",
    "🍞🔥",
    "",
    "   ",
]


def backend_for(longterm: Longterm, mode: str) -> LongtermBackend:
    options = LongtermOptions(url=longterm.url or "", schema=longterm.schema or "", mode=mode)
    return LongtermBackend("longterm", options, longterm.home)


@pytest.mark.parametrize("mode", MODES)
def test_hostile_topics_are_only_text(longterm: Longterm, mode: str) -> None:
    assert longterm.pao("memory", "add", "discount", "prices were cut by 50% for the __init__ crowd")[0] == 0
    assert longterm.pao("memory", "add", "plain", "nothing special lives here")[0] == 0
    backend = backend_for(longterm, mode)
    for topic in TOPICS:
        items = backend.search(topic, 10, time.monotonic() + 10)
        ids = [item.id for item in items]
        # A LIKE wildcard that was not escaped would match every observation.
        if topic in ("___", "%%%"):
            assert ids == [], (mode, topic)
    stats = longterm.pao_json("memory", "stats")
    assert stats["observations"] == 2 and stats["entities"] == 2


@pytest.mark.parametrize("mode", MODES)
def test_escaped_wildcards_still_find_the_literal_text(longterm: Longterm, mode: str) -> None:
    longterm.pao("memory", "add", "discount", "prices were cut by 50% for the __init__ crowd")
    longterm.pao("memory", "add", "plain", "nothing special lives here")
    items = backend_for(longterm, mode).search("__init__ 50%", 10, time.monotonic() + 10)
    assert [item.id for item in items] == ["obs:discount#0"]


def test_non_english_text_is_found(longterm: Longterm) -> None:
    longterm.pao("memory", "add", "Gus", "Der Sauerteig riecht nach Nagellackentferner und Aceton")
    longterm.pao("memory", "add", "other", "ein ganz anderes Thema über Fotografie")
    items = backend_for(longterm, "ranked").search("Sauerteig Nagellackentferner", 10, time.monotonic() + 10)
    assert [item.id for item in items] == ["obs:Gus#0"]


def test_hostile_text_is_stored_verbatim(longterm: Longterm) -> None:
    text = "'); DELETE FROM entities; -- \\ % _ & | ! <-> \u202e"
    longterm.pao_json("memory", "add", "hazard", text)
    items = backend_for(longterm, "original").search("DELETE entities", 10, time.monotonic() + 10)
    assert [item.text for item in items] == [text]
