"""``pao eval CORPUS_DIR``: measure briefing quality on a labelled corpus."""

from __future__ import annotations
