"""The sentence model's own cost on this CPU, the bound the background embedding is measured against.

Reports: the CPU's float32 matrix-multiply rate (numpy's BLAS, the shapes of one encoder layer), the
model's encode rate on realistic observations (sentences/s, tokens/s, no vector cache), and the FLOP
bound: all-MiniLM-L6-v2's parameters x tokens x 2 at that matmul rate.

    .venv/bin/python benches/encode_rate.py --texts 2000 --json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale_corpus import memory_lines  # noqa: E402


def observation_texts(count: int) -> list[str]:
    texts = []
    for line in memory_lines(count):
        record = json.loads(line)
        texts += [f"{record['name']}: {text}" for text in record.get("observations", ())]
    return texts[:count]


def matmul_gflops(tokens: int = 2048, seconds: float = 3.0) -> float:
    """float32 GFLOP/s of the encoder's largest product, (tokens x 384) @ (384 x 1536)."""
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((tokens, 384), dtype=np.float32)
    b = rng.standard_normal((384, 1536), dtype=np.float32)
    a @ b
    runs, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        a @ b
        runs += 1
    return 2 * tokens * 384 * 1536 * runs / (time.perf_counter() - started) / 1e9


def measure(count: int, batch_size: int) -> dict:
    from pao_embeddings.model import Encoder

    encoder = Encoder.load()
    encoder.cache = None  # the model's own cost: nothing remembered from an earlier run
    texts = observation_texts(count)
    tokens = sum(len(encoder.tokenizer.encode(text, 256)) for text in texts)
    params = sum(w.size for name, w in encoder.weights.items() if not name.endswith(("qkv.weight", "qkv.bias")))
    started_cpu, started = time.process_time(), time.perf_counter()
    encoder.encode(texts, batch_size=batch_size)
    wall, cpu = time.perf_counter() - started, time.process_time() - started_cpu
    gflops = matmul_gflops()
    bound_s = params * tokens * 2 / (gflops * 1e9)
    return {"texts": len(texts), "tokens": tokens, "tokens_per_text": round(tokens / len(texts), 1),
            "parameters": params, "batch_size": batch_size, "encode_s": round(wall, 2), "encode_cpu_s": round(cpu, 2),
            "sentences_per_s": round(len(texts) / wall, 1), "tokens_per_s": round(tokens / wall),
            "matmul_gflops": round(gflops, 1), "flop_bound_s": round(bound_s, 2),
            "flop_bound_sentences_per_s": round(len(texts) / bound_s, 1),
            "achieved_gflops": round(params * tokens * 2 / wall / 1e9, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = measure(args.texts, args.batch_size)
    print(json.dumps(result, indent=2) if args.json else "\n".join(f"{k}: {v}" for k, v in result.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
