"""docs/hooks.md documents every hook with its exact signature; every hook has a test of its own."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from pao_core import hookspecs

ROOT = Path(__file__).resolve().parents[1]


def hook_signatures() -> dict[str, str]:
    signatures = {}
    for name, function in vars(hookspecs).items():
        if name.startswith("pao_") and callable(function):
            text = str(inspect.signature(function)).replace("'", "")
            signatures[name] = f"def {name}{text}"
    return signatures


def test_every_hook_is_documented_with_its_exact_signature() -> None:
    page = (ROOT / "docs" / "hooks.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^### (pao_\w+)$", page, re.MULTILINE))
    signatures = hook_signatures()
    assert documented == set(signatures), "docs/hooks.md headings and hookspecs.py differ"
    for name, signature in signatures.items():
        assert f"\n{signature}\n" in page, f"docs/hooks.md shows a different signature for {name}: {signature}"


def test_every_hook_has_a_test_of_its_own() -> None:
    marked: set[str] = set()
    test_files = list((ROOT / "tests").rglob("test_*.py")) + list((ROOT / "plugins").glob("*/tests/**/test_*.py"))
    for path in test_files:
        marked.update(re.findall(r"""pytest\.mark\.hook\(\s*["'](pao_\w+)["']""", path.read_text(encoding="utf-8")))
    missing = set(hook_signatures()) - marked
    assert not missing, f"hooks without a test marked @pytest.mark.hook(...): {sorted(missing)}"
