"""docs/hooks.md documents every hook with its exact signature, pao_core's and those the installed plugins add
(``pao_addhooks``: pao-agents' ``pao_agents.spec.hookspecs``); every hook has a test of its own."""

from __future__ import annotations

import functools
import inspect
import re
from pathlib import Path
from typing import Any, Callable

import attrs
import pluggy

from pao_core import hookspecs
from pao_core.plugins import build_plugins

ROOT = Path(__file__).resolve().parents[1]


@functools.cache
def hook_specs() -> dict[str, Callable[..., Any]]:
    """Every hook specification of a complete load: the core's and every plugin's own, by name."""
    manager = build_plugins({}).manager
    callers = [caller for caller in vars(manager.hook).values() if isinstance(caller, pluggy.HookCaller)]
    return {caller.name: caller.spec.function for caller in callers if caller.spec is not None}


def hook_signatures() -> dict[str, str]:
    signatures = {}
    for name, function in hook_specs().items():
        text = str(inspect.signature(function)).replace("'", "")
        signatures[name] = f"def {name}{text}"
    return signatures


def test_plugins_add_their_own_hooks() -> None:
    """The core specifies the memory and briefing hooks; pao-agents adds the agent side's through ``pao_addhooks``."""
    specs = hook_specs()
    assert specs["pao_memory_backends"].__module__ == "pao_core.hookspecs"
    assert {specs[name].__module__ for name in ("pao_host_agents", "pao_terminal_drivers", "pao_registry_stores")} == {
        "pao_agents.spec.hookspecs"}
    assert not [name for name in vars(hookspecs) if name in ("pao_host_agents", "pao_terminal_drivers")]


def test_every_hook_is_documented_with_its_exact_signature() -> None:
    page = (ROOT / "docs" / "hooks.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^### (pao_\w+)$", page, re.MULTILINE))
    signatures = hook_signatures()
    assert documented == set(signatures), "docs/hooks.md headings and hookspecs.py differ"
    for name, signature in signatures.items():
        assert f"\n{signature}\n" in page, f"docs/hooks.md shows a different signature for {name}: {signature}"


def test_every_hook_is_described_by_the_line_of_its_spec() -> None:
    """hookspecs.py says what each hook is in one line; the page says it too, then the rest, once."""
    page = (ROOT / "docs" / "hooks.md").read_text(encoding="utf-8")
    for name in hook_signatures():
        summary = inspect.getdoc(hook_specs()[name]) or ""
        assert "\n" not in summary, f"{name}: the spec's docstring is one line; the rest belongs in docs/hooks.md"
        section = " ".join(page.split(f"### {name}\n", 1)[1].split("\n### ", 1)[0].split())
        assert " ".join(summary.replace("``", "`").rstrip(".").split()) in section, f"docs/hooks.md: {name} lacks {summary!r}"


def test_every_hook_has_a_test_of_its_own() -> None:
    marked: set[str] = set()
    test_files = list((ROOT / "tests").rglob("test_*.py")) + list((ROOT / "plugins").glob("*/tests/**/test_*.py"))
    for path in test_files:
        marked.update(re.findall(r"""pytest\.mark\.hook\(\s*["'](pao_\w+)["']""", path.read_text(encoding="utf-8")))
    missing = set(hook_signatures()) - marked
    assert not missing, f"hooks without a test marked @pytest.mark.hook(...): {sorted(missing)}"


def contract_block(contract: type) -> str:
    """The page's listing of one contract, made from its class itself."""
    defaults = {field.name: field.default for field in attrs.fields(contract)} if attrs.has(contract) else vars(contract)
    lines = [f"class {contract.__name__}:"]
    for name, annotation in vars(contract).get("__annotations__", {}).items():
        default = defaults.get(name, attrs.NOTHING)
        default = default.factory() if isinstance(default, attrs.Factory) else default  # type: ignore[arg-type]
        lines.append(f"    {name}: {annotation}" + ("" if default is attrs.NOTHING else f" = {default!r}"))
    for name, member in vars(contract).items():
        if name.startswith("_") or not inspect.isfunction(member):
            continue
        signature = str(inspect.signature(member)).replace("'", "")
        summary = " ".join((inspect.getdoc(member) or "").replace("``", "`").split())
        optional = inspect.isabstract(contract) and not getattr(member, "__isabstractmethod__", False)
        lines.append(f"    def {name}{signature}")
        if summary:
            lines.append(f"        # {'optional: ' if optional else ''}{summary}")
    return "```python\n" + "\n".join(lines) + "\n```"


def contracts_page(page: str) -> str:
    """``page`` with every contract block regenerated (between its markers)."""
    hook_specs()  # the plugins' hooks name their contracts too
    named = {contract.__name__: contract for contract in hookspecs.RETURNS.values()}

    def block(match: re.Match[str]) -> str:
        return f"{match[1]}\n{contract_block(named[match[2]])}\n{match[3]}"

    return re.sub(r"(<!-- contract (\w+) -->)\n.*?\n(<!-- /contract -->)", block, page, flags=re.S)


def test_every_contract_is_documented_from_its_class() -> None:
    page = (ROOT / "docs" / "hooks.md").read_text(encoding="utf-8")
    hook_specs()
    shown = set(re.findall(r"<!-- contract (\w+) -->", page))
    assert shown == {contract.__name__ for contract in hookspecs.RETURNS.values()}, "docs/hooks.md misses a contract"
    assert page == contracts_page(page), "docs/hooks.md is out of date: run `python tests/test_hooks_doc.py`"


def test_every_collection_hook_names_its_contract() -> None:
    page = (ROOT / "docs" / "hooks.md").read_text(encoding="utf-8")
    hook_specs()
    for hook, contract in hookspecs.RETURNS.items():
        section = page.split(f"### {hook}\n", 1)[1].split("\n### ", 1)[0]
        assert f"[`{contract.__name__}`]" in section, f"docs/hooks.md: {hook} does not link its contract {contract.__name__}"


if __name__ == "__main__":  # rewrite the contract blocks of docs/hooks.md from the contracts' classes
    path = ROOT / "docs" / "hooks.md"
    path.write_text(contracts_page(path.read_text(encoding="utf-8")), encoding="utf-8")
