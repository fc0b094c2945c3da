"""all-MiniLM-L6-v2's forward pass in numpy: a 6-layer BERT encoder, then its states mean-pooled and L2-normalised.

:mod:`pao_embeddings.model` loads the weights (prepared once by :func:`prepare`) and the tokenizer, and batches texts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

HEADS = 12
LAYERS = 6
LAYER_NORM_EPS = 1e-12


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    import numpy as np  # loads numpy on use: start-up stays light

    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    variance = np.square(centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(variance + LAYER_NORM_EPS) * weight + bias


GELU_BLOCK = 16384
"""Elements per GELU step: a block that stays in the CPU cache across the dozen passes below."""


def gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, 0.5 x (1 + erf(x / sqrt 2)), in place on a 2-D float32 ``x``.

    numpy has no erf: Abramowitz & Stegun 7.1.26 (error under 1.5e-7). It runs over
    cache-sized blocks of rows because this is the largest elementwise cost of the model.
    """
    import numpy as np  # loads numpy on use: start-up stays light

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


def prepare(weights: dict[str, np.ndarray]) -> None:
    """Fuse each layer's query/key/value projections (one matmul instead of three) and store
    every dense weight transposed, as ``x @ W`` reads it."""
    import numpy as np  # loads numpy on use: start-up stays light

    for layer in range(LAYERS):
        prefix = f"encoder.layer.{layer}.attention.self."
        parts = ("query", "key", "value")
        weights[prefix + "qkv.weight"] = np.concatenate([weights[f"{prefix}{p}.weight"].T for p in parts], axis=1)
        weights[prefix + "qkv.bias"] = np.concatenate([weights[f"{prefix}{p}.bias"] for p in parts])
    for name in [n for n in weights if n.endswith("dense.weight")]:
        weights[name] = np.ascontiguousarray(weights[name].T)


def forward(weights: dict[str, np.ndarray], batch: list[list[int]]) -> np.ndarray:
    """Unit-length sentence vectors of a batch of token ids: the encoder's states, mean-pooled over each text's tokens."""
    import numpy as np  # loads numpy on use: start-up stays light

    w = weights
    batch_size, length = len(batch), max(len(ids) for ids in batch)
    ids = np.zeros((batch_size, length), dtype=np.int64)
    mask = np.zeros((batch_size, length), dtype=np.float32)
    for row, tokens in enumerate(batch):
        ids[row, : len(tokens)] = tokens
        mask[row, : len(tokens)] = 1.0
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:length]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = layer_norm(x.reshape(batch_size * length, -1), w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    # padded keys get a large negative score, so softmax gives them no weight
    key_bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
    for layer in range(LAYERS):
        x = _layer(w, x, key_bias, (batch_size, length), f"encoder.layer.{layer}.")
    summed = (x.reshape(batch_size, length, -1) * mask[:, :, None]).sum(axis=1)
    pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


def _layer(w: dict[str, np.ndarray], x: np.ndarray, key_bias: np.ndarray, shape: tuple[int, int], prefix: str) -> np.ndarray:
    """One encoder layer on ``x`` of (batch x length, width); batched matmuls want contiguous operands."""
    import numpy as np  # loads numpy on use: start-up stays light

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
    x = layer_norm(attended, w[prefix + "attention.output.LayerNorm.weight"], w[prefix + "attention.output.LayerNorm.bias"])
    inner = gelu(x @ w[prefix + "intermediate.dense.weight"] + w[prefix + "intermediate.dense.bias"])
    out = inner @ w[prefix + "output.dense.weight"] + w[prefix + "output.dense.bias"]
    out += x
    return layer_norm(out, w[prefix + "output.LayerNorm.weight"], w[prefix + "output.LayerNorm.bias"])
