"""`benches/run --only` keeps the page whole: the headline rows of the scripts it ran are replaced in place."""

from __future__ import annotations

import importlib.machinery
import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_runner() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("benches_run", str(ROOT / "benches" / "run"))
    spec = importlib.util.spec_from_loader("benches_run", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def page(rows: list[str], sections: dict[str, str]) -> str:
    table = ["| figure | original system | pao (measured) | target | met | reproduce |", "|---|---|---|---|---|---|"]
    body = [f"### {title}\n\n{text}\n" for title, text in sections.items()]
    return "\n".join(["# Benchmarks", "", "## Against the original system", "", *table, *rows, "",
                      "## Every figure", "", *body])


def test_only_replaces_the_headline_rows_of_the_scripts_it_ran() -> None:
    run = load_runner()
    old = page(["| latency | 586 ms | 400 ms | | | `bench a` |", "| precision | 57% | 94% | | | `eval b` |"],
               {"A": "old a", "B": "old b"})
    fresh = page(["| latency | 586 ms | 200 ms | | | `bench a` |", "| speed | 1 | 2 | | | `bench c` |"],
                 {"A": "new a", "C": "new c"})
    stamp = {"date": "2026-12-01 02:00 UTC", "commit": "abc1234", "load": "0.50, 0.40, 0.30"}
    once = run.splice(old, fresh, stamp, (0.6, 0.5, 0.4), ["A", "B", "C"])
    twice = run.splice(once, fresh, {**stamp, "commit": "def5678"}, (0.6, 0.5, 0.4), ["A", "B", "C"])
    for spliced in (once, twice):
        assert "400 ms" not in spliced and "200 ms" in spliced and "| precision | 57% | 94% |" in spliced
        assert spliced.index("200 ms") < spliced.index("94%") < spliced.index("| speed |") < spliced.index("## Every")
        assert "old a" not in spliced and "new a" in spliced and "old b" in spliced and "new c" in spliced
        assert spliced.count("- Rows reproduced by `bench a`") == 1 and "\n\n\n" not in spliced
    assert "commit def5678" in twice and "commit abc1234" not in twice


def test_a_section_no_bench_writes_stays_after_the_one_it_followed() -> None:
    old = page([], {"A": "old a", "Hand-written evidence": "kept", "B": "old b"})
    fresh = page([], {"A": "new a"})
    stamp = {"date": "2026-12-04 01:24 UTC", "commit": "c69c4c6", "load": "0.30, 0.40, 0.50"}

    spliced = load_runner().splice(old, fresh, stamp, (0.3, 0.4, 0.5), ["A", "B"])

    assert [line for line in spliced.splitlines() if line.startswith("### ")] == ["### A", "### Hand-written evidence", "### B"]
    assert "new a" in spliced and "old a" not in spliced and "kept" in spliced
