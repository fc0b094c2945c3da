"""The architecture's measures (``benches/architecture.py``): what they count, and the rules that hold."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location("architecture_bench", ROOT / "benches" / "architecture.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_measures_count_what_they_say(tmp_path: Path, monkeypatch) -> None:
    bench = _bench()
    package = tmp_path / "pao_knot"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pao_knot import b\n")
    (package / "b.py").write_text("def f():\n    from pao_knot.a import x\n\n\ndef g():\n    import json  # start-up\n")
    (package / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pao_knot import d\n")
    (package / "d.py").write_text("import pao_knot.c\n")  # a cycle closed by a type-only import is a cycle
    (package / "e.py").write_text("from pao_knot import a\n")  # imports a cycle: not part of it
    monkeypatch.setattr(bench, "PACKAGE_ROOTS", [tmp_path])
    report = bench.measure()
    assert sorted(report["import_cycles"]) == [["pao_knot.a", "pao_knot.b"], ["pao_knot.c", "pao_knot.d"]]
    edges = dict(zip(map(tuple, report["import_cycles"]), report["import_cycle_edges"]))
    assert edges["pao_knot.a", "pao_knot.b"] == [f"pao_knot.a -> pao_knot.b: {package}/a.py:1",
                                                f"pao_knot.b -> pao_knot.a: {package}/b.py:2"]
    assert edges["pao_knot.c", "pao_knot.d"] == [f"pao_knot.c -> pao_knot.d: {package}/c.py:3 (type-only)",
                                                f"pao_knot.d -> pao_knot.c: {package}/d.py:1"]
    assert report["function_level_imports"] == 2
    assert report["uncommented_function_level_imports"] == [f"{package}/b.py:2"]


def test_no_import_cycle_in_the_repository() -> None:
    """Type-only imports (``if TYPE_CHECKING:``) count: a module that needs another's names to be read depends on it."""
    report = _bench().measure()
    found = "\n".join(f"{', '.join(group)}:\n  " + "\n  ".join(edges)
                      for group, edges in zip(report["import_cycles"], report["import_cycle_edges"]))
    assert report["import_cycles"] == [], f"modules that import each other, and the imports that close each cycle:\n{found}"


def test_pao_core_stays_within_its_line_budget() -> None:
    report = _bench().measure()
    assert report["pao_core_lines"] <= report["pao_core_budget"], (
        f"pao_core has {report['pao_core_lines']} production lines (budget {report['pao_core_budget']}): "
        "put new capability in the plugin distribution it belongs to")


def test_every_function_level_import_says_why() -> None:
    uncommented = _bench().measure()["uncommented_function_level_imports"]
    assert uncommented == [], f"imports inside functions with no comment saying why (start-up): {uncommented}"


def test_the_plugin_tutorial_builds_its_backend_in_under_60_lines() -> None:
    lines = (ROOT / "docs" / "examples" / "pao-notes" / "pao_notes.py").read_text(encoding="utf-8").splitlines()
    assert len(lines) < 60
