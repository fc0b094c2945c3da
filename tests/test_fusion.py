"""Fusion: rank fusion without raw scores, floors, near-duplicates, supersession, budget."""

from __future__ import annotations

import datetime as dt

import attrs
from hypothesis import given
from hypothesis import strategies as st

from pao_core.config import BriefingOptions
from pao_core.fusion import (
    apply_floors,
    drop_near_duplicates,
    fit_budget,
    fuse,
    order_superseded,
    reciprocal_rank,
    text_date,
)
from pao_core.models import BackendResult, MemoryItem


def item(backend: str, ident: str, text: str, *, rank: int, score: float = 1.0, title: str = "",
         kind: str = "observation", **meta) -> MemoryItem:
    return MemoryItem(backend, ident, title or ident, text, kind=kind, score=score, rank=rank, meta=meta)


def result(name: str, *items: MemoryItem, status: str = "ok") -> BackendResult:
    return BackendResult(name, status, items=items)  # type: ignore[arg-type]


def test_rank_fusion_ignores_raw_scores_across_engines() -> None:
    loud = [item("a", f"a{i}", f"alpha {i}", rank=i, score=1000.0 - i) for i in range(1, 4)]
    quiet = [item("b", f"b{i}", f"beta {i}", rank=i, score=0.001 / i) for i in range(1, 4)]
    fused = reciprocal_rank({"a": loud, "b": quiet}, k=60)
    assert [i.id for i in fused] == ["a1", "b1", "a2", "b2", "a3", "b3"]
    assert fused[0].fusion["fused_score"] == round(1 / 61, 6)


def test_floors_are_per_backend_and_failed_backends_are_skipped() -> None:
    results = {
        "a": result("a", item("a", "a1", "x", rank=1, score=9), item("a", "a2", "y", rank=2, score=2)),
        "b": result("b", item("b", "b1", "x", rank=1, score=0.9), item("b", "b2", "y", rank=2, score=0.2)),
        "c": result("c", status="timeout"),
    }
    kept = apply_floors(results, BriefingOptions(floors={"a": 5.0}))
    assert {name: [i.id for i in items] for name, items in kept.items()} == {"a": ["a1"], "b": ["b1", "b2"]}
    kept = apply_floors(results, BriefingOptions(relative_floor=0.5))
    assert {name: [i.id for i in items] for name, items in kept.items()} == {"a": ["a1"], "b": ["b1"]}


def test_near_duplicates_across_entities_keep_the_better_ranked() -> None:
    first = item("a", "obs:ARC runners#3", "Public repositories must not use self-hosted runners since a pull request "
                 "from a fork could run arbitrary code on the LAN.", rank=1)
    twin = item("a", "obs:runner policy#0", "Public repositories must never use self-hosted runners, since a pull "
                "request from a fork could run arbitrary code on the LAN.", rank=2)
    other = item("a", "obs:x#1", "bramble-02 is an Intel NUC 11 at 10.20.0.12.", rank=3)
    sibling = item("a", "obs:x#2", "bramble-03 is an Intel NUC 11 at 10.20.0.13.", rank=4)
    kept = drop_near_duplicates([first, twin, other, sibling], threshold=0.5)
    assert [i.id for i in kept] == ["obs:ARC runners#3", "obs:x#1", "obs:x#2"]
    assert kept[0].fusion["duplicates"] == ["obs:runner policy#0"]


def test_text_dates() -> None:
    assert text_date("2026-01-09: revised the Q4 payment") == dt.date(2026, 1, 9)
    assert text_date("Since 2025-11 the share is Camas flour") == dt.date(2025, 11, 1)
    assert text_date("From the June 2025 key backup notes") == dt.date(2025, 6, 1)
    assert text_date("build 20251-03-04 and 1:5:5 feed") is None


def test_newer_dated_item_comes_first_and_the_older_is_marked() -> None:
    older = item("a", "obs:Gus#4", "2025-06-14: Gus is fed 1:1:1 twice a day.", rank=1, title="Gus", position=4)
    undated = item("a", "obs:Gus#1", "Gus lives in a Weck jar.", rank=2, title="Gus", position=1)
    newer = item("a", "obs:Gus#9", "2025-11-02: Gus is now fed 1:5:5 once a day.", rank=3, title="Gus", position=9)
    unrelated = item("a", "obs:Lena#0", "2024-01-01: Lena gave Sam the starter.", rank=4, title="Lena")
    ordered = order_superseded([older, undated, newer, unrelated])
    assert [i.id for i in ordered] == ["obs:Gus#9", "obs:Gus#1", "obs:Gus#4", "obs:Lena#0"]
    assert ordered[2].fusion["earlier"] is True and ordered[2].fusion["superseded_by"] == "obs:Gus#9"
    assert "earlier" not in ordered[0].fusion and "earlier" not in ordered[1].fusion


def test_dated_items_about_different_things_are_not_superseded() -> None:
    a = item("a", "e#0", "2025-01-01: bought flour", rank=1, title="e")
    b = item("a", "e#1", "2025-02-01: repaired the oven door", rank=2, title="e")
    assert order_superseded([a, b]) == [a, b]


def test_conversation_turns_are_never_superseded_by_their_timestamps() -> None:
    when = dt.datetime(2025, 10, 1, tzinfo=dt.timezone.utc)
    turns = [
        MemoryItem("h", f"msg:s:{i}", "blog", f"User: the zola build fails, try {i}", kind="exchange",
                   timestamp=when + dt.timedelta(minutes=i), rank=i + 1)
        for i in range(3)
    ]
    assert order_superseded(turns) == turns


def test_supersession_pulls_the_newer_item_above_the_cut() -> None:
    older = item("a", "obs:ci#0", "2025-08-04: rust-ci caches target/ by hand", rank=1, title="ci", position=0)
    fillers = [item("a", f"obs:f{i}#0", f"filler fact {i} about rust", rank=i + 2) for i in range(5)]
    newer = item("a", "obs:ci#3", "2025-10-19: rust-ci caches with rust-cache and sccache", rank=7, title="ci",
                 position=3)
    fused = fuse({"a": result("a", older, *fillers, newer)}, BriefingOptions(max_items=3))
    assert [i.id for i in fused] == ["obs:ci#3", "obs:f0#0", "obs:f1#0"]
    longer = fuse({"a": result("a", older, *fillers, newer)}, BriefingOptions(max_items=10))
    assert longer[0].id == "obs:ci#3" and longer[-1].id == "obs:ci#0" and longer[-1].fusion["earlier"]


def test_fuse_caps_items_and_keeps_every_backend_represented() -> None:
    results = {
        "long": result("long", *[item("long", f"l{i}", f"fact {i} about the longterm store", rank=i) for i in range(1, 20)]),
        "hist": result("hist", *[item("hist", f"h{i}", f"talk {i} from a session", rank=i, kind="exchange")
                                 for i in range(1, 20)]),
    }
    fused = fuse(results, BriefingOptions(max_items=6))
    assert [i.id for i in fused] == ["h1", "l1", "h2", "l2", "h3", "l3"]


@given(st.lists(st.integers(min_value=0, max_value=50), max_size=30), st.integers(min_value=0, max_value=400))
def test_fit_budget_finds_the_longest_prefix_that_fits(lengths: list[int], budget: int) -> None:
    items = [item("a", str(i), "x" * n, rank=i + 1) for i, n in enumerate(lengths)]

    def render(chosen):
        return "header\n" + "".join(f"- {i.text}\n" for i in chosen)

    count = fit_budget(items, render, budget)
    if count:
        assert len(render(items[:count])) <= budget
    if count < len(items):
        assert len(render(items[: count + 1])) > budget


def agent_item(ident: str, text: str, *, rank: int, title: str, recorded: str = "2026-12-03T10:00:00+00:00",
               kept: str | None = None) -> MemoryItem:
    provenance = {"agent": "api", "session_id": "s1", "recorded_at": recorded, "kept_at": kept}
    stored = dt.datetime.fromisoformat(recorded)  # the store's clock when the agent wrote it
    return attrs.evolve(item("a", ident, text, rank=rank, title=title, provenance=provenance), timestamp=stored)


def test_an_agent_fact_dated_2099_never_supersedes_the_user_s() -> None:
    user = item("a", "obs:ci#0", "2025-10-19: rust-ci.yml caches the cargo registry with actions/cache", rank=2,
                title="ci", position=0)
    agent = agent_item("obs:ci#1", "2099-01-01: rust-ci.yml caches the cargo registry with sccache", rank=1, title="ci")
    fused = fuse({"a": result("a", user, agent)}, BriefingOptions())
    assert [i.id for i in fused] == ["obs:ci#0", "obs:ci#1"]  # the user's first, though the agent's ranked higher
    assert not any(i.fusion.get("earlier") for i in fused)


def test_agent_facts_supersede_each_other_by_pao_s_clock_not_their_text() -> None:
    first = agent_item("obs:ci#1", "2099-01-01: rust-ci.yml caches the registry with sccache", rank=1, title="ci",
                       recorded="2026-12-04T10:00:00+00:00")
    second = agent_item("obs:ci#2", "2020-01-01: rust-ci.yml caches the registry with mold", rank=2, title="ci",
                        recorded="2026-12-05T10:00:00+00:00")
    ordered = order_superseded([first, second])
    assert [i.id for i in ordered] == ["obs:ci#2", "obs:ci#1"] and ordered[1].fusion["earlier"] is True


def test_a_near_duplicate_agent_fact_never_hides_the_user_s() -> None:
    text = "Public repositories must not use self-hosted runners since a fork could run code on the LAN."
    agent = agent_item("obs:runners#1", text.replace("must not", "must never"), rank=1, title="runners")
    user = item("a", "obs:runners#0", text, rank=2, title="runners")
    assert [i.id for i in drop_near_duplicates([agent, user], threshold=0.5)] == ["obs:runners#1"]  # rank alone
    kept = fuse({"a": result("a", agent, user)}, BriefingOptions())
    assert [i.id for i in kept] == ["obs:runners#0"] and kept[0].fusion["duplicates"] == ["obs:runners#1"]


def test_at_most_agent_items_of_the_agents_tier_and_a_kept_fact_is_the_user_s() -> None:
    notes = [agent_item(f"obs:n#{i}", f"note {i} on topic {i * 7}", rank=i + 1, title="n") for i in range(40)]
    kept = agent_item("obs:k#0", "kept note on the pipeline", rank=41, title="k", kept="2026-12-04T00:00:00+00:00")
    users = [item("a", f"obs:u#{i}", f"user fact {i} about item {i * 11}", rank=50 + i, title="u") for i in range(3)]
    fused = fuse({"a": result("a", *notes, kept, *users)}, BriefingOptions(max_items=12, agent_items=3))
    assert [i.id for i in fused[:4]] == ["obs:k#0", "obs:u#0", "obs:u#1", "obs:u#2"]
    assert [i.id for i in fused[4:]] == ["obs:n#0", "obs:n#1", "obs:n#2"]
    assert len(fuse({"a": result("a", *notes)}, BriefingOptions(agent_items=0))) == 0
