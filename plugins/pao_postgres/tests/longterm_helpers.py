"""Helpers of pao-postgres's tests (a module with a unique name, importable from any test)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import attrs

EVAL_MEMORY = Path(__file__).resolve().parents[3] / "tests" / "data" / "eval" / "memory.jsonl"


@attrs.define
class Longterm:
    """One isolated pao environment whose longterm store is ``dialect``."""

    dialect: str
    home: Path
    config_file: Path
    url: str | None
    schema: str | None

    def configure(self, extra: str = "") -> None:
        lines = ["[backends.longterm]"]
        if self.url:
            lines.append(f'url = "{self.url}"')
            lines.append(f'schema = "{self.schema}"')
        self.config_file.write_text("\n".join(lines) + "\n" + extra)

    def pao(self, *argv: str) -> tuple[int, str, str]:
        """Run ``pao ARGV`` in this process; return (exit code, stdout, stderr)."""
        from pao_core.cli import main

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
        return code, out.getvalue(), err.getvalue()

    def pao_json(self, *argv: str) -> object:
        code, out, err = self.pao(*argv, "--json")
        assert code == 0, err
        return json.loads(out)


def longterm_backend():  # type: ignore[no-untyped-def]
    """The configured longterm store as pao's plugins make it: a ``WritableMemory``."""
    from pao_core.plugins import load_config
    from pao_core.contracts import MemoryBackend, writable
    from pao_core.plugins import get_plugins

    (backend,) = [b for b in writable(get_plugins().memory_backends(load_config())) if b.name == "longterm"]
    assert isinstance(backend, MemoryBackend)
    return backend
