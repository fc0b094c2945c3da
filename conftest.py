"""Repository-wide pytest set-up.

The real-CLI fixtures come from the ``pao-testing`` distribution (``testing/``), registered
through its ``pytest11`` entry point; this file keeps the repository root importable.
"""

import os
from pathlib import Path

# One cache of the sentence model's prepared weights and of computed vectors for every test
# and every pao they start (each gets a HOME of its own, which would prepare them again):
# importing the eval corpus embeds its 912 observations once per machine, not once per test.
os.environ.setdefault("PAO_EMBEDDINGS_CACHE", str(Path(__file__).resolve().parent / ".cache" / "embeddings"))

# No test leaves a warm longterm searcher behind (each would live 15 minutes): the searcher's own
# tests (plugins/pao_postgres/tests/test_longterm_searcher.py) turn it on for their processes.
os.environ["PAO_WARM_SEARCHER"] = "0"

# Nor a warm brief server (each would live 15 minutes and warm up on a core the suite needs): its own tests
# (tests/test_warm_brief.py) run pao as a user does, with the variable unset.
os.environ["PAO_WARM_BRIEF"] = "0"

# No test leaves a background embedding job behind in a folder it is about to delete: the jobs'
# own tests (plugins/pao_embeddings/tests/test_background_embedding.py) turn them on.
os.environ["PAO_BACKGROUND_EMBEDDING"] = "0"


def pytest_sessionfinish(session):  # type: ignore[no-untyped-def]
    """Stop every warm brief server a test started with an environment of its own making (the variable above not
    in it): one whose environment names this session's temporary folder. Each exits by itself once its test's
    files are gone, but pytest keeps the last sessions' folders."""
    import signal  # only at the session's end

    base = str(session.config._tmp_path_factory.getbasetemp()).encode()
    for process in Path("/proc").glob("[0-9]*"):
        try:
            if b"pao_postgres.warm_brief_server" in (process / "cmdline").read_bytes() \
                    and base in (process / "environ").read_bytes():
                os.kill(int(process.name), signal.SIGTERM)
        except (OSError, ValueError):  # gone meanwhile, or not ours to read
            continue
