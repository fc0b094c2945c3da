"""The architecture's measures (``benches/architecture.py``): what they count, and the rules that hold."""

from __future__ import annotations

import ast
import importlib.util
import os
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


MODULE_LINES, FUNCTION_LINES = 400, 60
SKIPPED = {".git", ".venv", ".cache", "build", "node_modules", "__pycache__"}


def _python_sources() -> list[Path]:
    """Every Python file of the repository: modules, tests, benches, and the scripts whose first line runs Python."""
    found = []
    for folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = sorted(name for name in subfolders if name not in SKIPPED and not name.endswith(".egg-info"))
        for name in sorted(files):
            path = Path(folder) / name
            if name.endswith(".py") or ("." not in name and _runs_python(path)):
                found.append(path)
    return found


def _runs_python(path: Path) -> bool:
    with path.open("rb") as handle:
        first = handle.readline()
    return first.startswith(b"#!") and b"python" in first


def test_no_module_over_400_lines_and_no_function_over_60() -> None:
    long_modules, long_functions = [], []
    for path in _python_sources():
        text = path.read_text(encoding="utf-8")
        name = str(path.relative_to(ROOT))
        if len(text.splitlines()) > MODULE_LINES:
            long_modules.append(f"{name}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > FUNCTION_LINES:
                    long_functions.append(f"{name}:{node.lineno} {node.name}: {length} lines")
    assert not long_modules, f"modules over {MODULE_LINES} lines (split them by meaning): {long_modules}"
    assert not long_functions, f"functions over {FUNCTION_LINES} lines (split them by meaning): {long_functions}"


def test_no_two_test_folders_hold_a_module_of_the_same_name() -> None:
    """pytest imports a test folder's modules (no __init__.py) by their bare name, the folder put first on sys.path
    (its default "prepend" mode): two test_x.py in two plugins' folders fail as an import mismatch, and two support
    modules of one name would quietly import the other folder's. conftest.py is the exception pytest handles."""
    folders = [ROOT / "tests", *sorted(ROOT.glob("plugins/*/tests"))]
    seen: dict[str, list[str]] = {}
    for folder in folders:
        for path in folder.glob("*.py"):
            if path.name != "conftest.py":
                seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    shared = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not shared, f"modules of one name in several test folders (rename one): {shared}"
