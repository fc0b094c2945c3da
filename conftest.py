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
# (plugins/pao_postgres/tests/test_warm_brief.py) run pao as a user does, with the variable unset.
os.environ["PAO_WARM_BRIEF"] = "0"

# No test leaves a background embedding job behind in a folder it is about to delete: the jobs'
# own tests (plugins/pao_embeddings/tests/test_background_embedding.py) turn them on.
os.environ["PAO_BACKGROUND_EMBEDDING"] = "0"
