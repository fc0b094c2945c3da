"""The architecture's measures: pao_core's size, import cycles, function-level imports.

    .venv/bin/python benches/architecture.py [--json]

- **pao_core production lines**: ``wc -l`` over ``pao_core/**/*.py`` (the budget is 3,607, a
  ratchet: issue 29 moved the agent side's contracts, records, options, hooks, errors and locked JSON
  edits to ``pao_agents.spec``, 4,139 -> 3,670; issue 30's start-up features (``--json`` errors, "did you
  mean", strict values, completion, doctor's deadline) and the guard on ``PAO_HOME`` added 33; one reader of
  the installed version instead of two took 2 off; one structure-or-error helper for config's four tables and one list
  of registered plugins for ``describe`` and the index took 22; one loop over the plugins'
  tables, whose mapping check the core structure already made, took 8; attrs' own bound validators, fusion
  reading ``[briefing]``'s options instead of a copy of them, ``brief --json`` built from the records' fields,
  one registration of a loaded plugin, one importer of ``module:attr`` names, one way for a command to take a
  broken file, a constant nobody read, and the topic-words helper moved to the one plugin that uses it took 82:
  3,588, under the target of 3,600; the generic ``pao_shortcuts`` hook, through which a plugin answers a command
  before anything loads (the warm brief server), added 10, the routers' commands kept in the plugin index (so
  a command no router takes loads none) 5, and the configuration refusing one string where a list belongs
  (which trusted the folders ``./c`` and ``./o`` for ``[trust] folders = "~/code"``) 13: 3,620).
- **import cycles**: groups of modules of this repository (``pao_core``, each plugin,
  ``pao_testing``) that import each other, directly or through others, counting every
  import statement: module level, inside a function, and under ``if TYPE_CHECKING:`` (a
  type-only import is still a dependency: the modules cannot be understood, moved or
  split apart). Each group is reported with the imports that close it (``file:line``,
  ``type-only`` marked), so the cycle can be cut where it is.
- **function-level imports**: imports inside a function, and those of them with no
  comment on their line or the line above saying why (the rule: only to keep start-up
  light, and each says so).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_ROOTS = [ROOT, *sorted((ROOT / "plugins").glob("*")), ROOT / "testing"]
LINE_BUDGET = 3620


def modules() -> dict[str, Path]:
    """Every module of the repository's packages, by dotted name."""
    found = {}
    for base in PACKAGE_ROOTS:
        for init in sorted(base.glob("*/__init__.py")):
            if not init.parent.name.startswith("pao"):
                continue
            for path in sorted(init.parent.rglob("*.py")):
                parts = path.relative_to(base).with_suffix("").parts
                found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _type_checking_lines(tree: ast.AST) -> set[int]:
    """The lines of imports under ``if TYPE_CHECKING:`` (counted like the others, and marked in the report)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _imports(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Each import statement, and whether it sits inside a function."""

    def visit(node: ast.AST, in_function: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, in_function
            yield from visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    yield from visit(tree, False)


def _targets(node: ast.Import | ast.ImportFrom, module: str, path: Path, known: dict[str, Path]) -> list[str]:
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
            package = package[: len(package) - node.level + 1]
            base = ".".join(package + ([base] if base else []))
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
    resolved = []
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name and name != module:
            resolved.append(name)
    return resolved


def measure() -> dict:
    known = modules()
    graph: dict[str, set[str]] = {name: set() for name in known}
    where: dict[tuple[str, str], list[str]] = {}
    function_level: list[str] = []
    uncommented: list[str] = []
    for name, path in known.items():
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        tree = ast.parse(text)
        type_only = _type_checking_lines(tree)
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        for node, in_function in _imports(tree):
            for target in dict.fromkeys(_targets(node, name, path, known)):
                graph[name].add(target)
                kind = " (type-only)" if node.lineno in type_only else ""
                where.setdefault((name, target), []).append(f"{shown}:{node.lineno}{kind}")
            if in_function:
                function_level.append(f"{shown}:{node.lineno}")
                nearby = lines[node.lineno - 1] + (lines[node.lineno - 2] if node.lineno > 1 else "")
                if "#" not in nearby:
                    uncommented.append(f"{shown}:{node.lineno}")
    core = sorted((ROOT / "pao_core").rglob("*.py"))
    cycles = [sorted(group) for group in _cycles(graph)]
    return {
        "pao_core_lines": sum(len(p.read_bytes().splitlines()) for p in core),
        "pao_core_budget": LINE_BUDGET,
        "import_cycles": cycles,
        "import_cycle_edges": [[f"{source} -> {target}: {', '.join(where[source, target])}"
                                for source in group for target in sorted(graph[source] & set(group))]
                               for group in cycles],
        "function_level_imports": len(function_level),
        "uncommented_function_level_imports": uncommented,
    }


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []
    sys.setrecursionlimit(10000)

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return groups


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = measure()
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"pao_core production lines: {report['pao_core_lines']} (budget {report['pao_core_budget']})")
    print(f"import cycles (type-only imports counted): {len(report['import_cycles'])}")
    for group, edges in zip(report["import_cycles"], report["import_cycle_edges"]):
        print(f"  {', '.join(group)}; its imports:")
        for edge in edges:
            print(f"    {edge}")
    print(f"function-level imports: {report['function_level_imports']}, "
          f"without a comment saying why: {len(report['uncommented_function_level_imports'])}")
    for where in report["uncommented_function_level_imports"]:
        print(f"  {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
