"""Helpers of the pao-historyworker tests: the real ``pao`` CLI, the eval corpus, ``pao history serve``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

REPO = Path(__file__).resolve().parents[3]
EVAL_CORPORA = (REPO / "tests" / "data" / "eval", REPO.parent / "shared" / "eval")
"""The project's copy of the eval corpus, else the shared one next to the repository."""
PAO = str(Path(sys.executable).with_name("pao"))


def eval_transcripts() -> Path:
    given = [Path(os.environ["PAO_EVAL_DIR"])] if os.environ.get("PAO_EVAL_DIR") else []
    for corpus in (*given, *EVAL_CORPORA):
        if (corpus / "transcripts").is_dir():
            return corpus / "transcripts"
    raise RuntimeError("the eval corpus (tests/data/eval or ../shared/eval) is missing; set PAO_EVAL_DIR")


def pao(env: dict[str, str], *args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run the real ``pao`` command line."""
    done = subprocess.run([PAO, *args], env=env, capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"pao {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return done


def pao_json(env: dict[str, str], *args: str) -> dict:
    return json.loads(pao(env, *args, "--json").stdout)


def serve(env: dict[str, str], *extra: str) -> Iterator[str]:
    process = subprocess.Popen(
        [PAO, "history", "serve", "--port", "0", *extra], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        first = process.stdout.readline() if process.stdout else ""
        if not first.startswith("PAO_HISTORY_URL="):
            process.kill()
            raise AssertionError(f"serve printed {first!r} first; stderr: {process.stderr.read() if process.stderr else ''}")
        yield first.strip().split("=", 1)[1]
    finally:
        process.terminate()
        process.wait(timeout=10)
