"""Trained-model artifacts: ``TrainedModel.save`` and ``load_trained``.

Layout of an artifact directory (the contract storage and app rely on)::

    model.json   {"format": 1, "kind": "layers" | "full" | "adapter", "method", "base_encoder",
                 "config"; for "layers" also "base_fingerprint" and "precision"}
    layers/      weights.safetensors: only the tensors training changed, against the base
                 encoder named (its fingerprint recorded), in fp16   -- kind "layers" (issue 71)
    encoder/     a full sentence-transformers folder (safetensors)      -- kind "full": versions
                 written before issue 71, and a bundle's model opened as a project
    adapter/     adapter_model.safetensors + adapter_config.json (peft) -- kind "adapter"
    label_encoder/  a full sentence-transformers folder embedding the intents' anchors
                 -- only in versions trained before the separate (non-siamese) label encoder
                 left ``TrainConfig`` (``config.label_encoder == "separate"``); read, never written

Loading never executes code: pickled weights are refused, ``trust_remote_code`` stays off and only
sentence-transformers modules (with ``torch.nn`` activations) are accepted.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.encoding.registry import LABEL_DIR
from core.training.config import TrainConfig

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from core.encoding.registry import Encoder

logger = logging.getLogger(__name__)

FORMAT = 1
MODEL_JSON = "model.json"
LAYERS_DIR = "layers"
LAYERS_FILE = "weights.safetensors"
KINDS = {"layers": LAYERS_DIR, "full": "encoder", "adapter": "adapter"}
_PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt")


@dataclass
class TrainedModel:
    """A freshly trained encoder plus what is needed to save and describe it.

    Attributes:
        model: the trained SentenceTransformer (for ``"adapter"``: with a LoRA ``PeftModel`` inside).
        base_encoder: registry name (``"minilm"``) or folder of the base encoder.
        config: the run's :class:`TrainConfig`.
        kind: ``"full"`` (every layer may have moved; saved as the ``"layers"`` it changed) or
            ``"adapter"``.
        stats: steps, seconds and last loss of the run (not part of the artifact).
    """

    model: SentenceTransformer
    base_encoder: str
    config: TrainConfig
    kind: str = "full"
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def method(self) -> str:
        return self.config.method

    def metadata(self) -> dict[str, Any]:
        """The content of ``model.json``."""
        from core.encoding.registry import base_fingerprint

        layers = {"base_fingerprint": base_fingerprint(self.base_encoder), "precision": "fp16"}
        return {
            "format": FORMAT,
            "kind": "layers" if self.kind == "full" else self.kind,
            "method": self.method,
            "base_encoder": self.base_encoder,
            "config": self.config.to_dict(),
            **(layers if self.kind == "full" else {}),
        }

    def encoder(self) -> Encoder:
        """An :class:`core.encoding.registry.Encoder` over the trained model (adapters merged)."""
        return self._encoder(f"{self.method}@unsaved")

    def saved_encoder(self, directory: Path) -> Encoder:
        """The encoder of the artifact :meth:`save` wrote into ``directory``, without reading
        it back (issue 44): this model in memory, adapters merged as :func:`load_trained`
        merges them, under the fingerprint :func:`load_trained` gives that folder. Its weights
        are the ones written, so its vectors (and the embedding cache's) are the version's."""
        return self._encoder(artifact_fingerprint(Path(directory), self.method))

    def _encoder(self, fingerprint: str) -> Encoder:
        from core.encoding.registry import encoder_from_model
        from core.training.lora import merged_copy

        model = merged_copy(self.model) if self.kind == "adapter" else self.model
        model.eval()
        return encoder_from_model(model, f"{self.base_encoder}+{self.method}", fingerprint)

    def save(self, directory: Path) -> None:
        """Write the artifact into ``directory``, which must exist and be empty: a tuned encoder
        as the tensors it changed against its base (kind ``"layers"``, :func:`changed_layers`:
        rounded to fp16 in the model too, so the model in memory is the one written), an
        adapter as its adapter.

        Raises:
            FileNotFoundError: if ``directory`` does not exist.
            FileExistsError: if it is not empty.
        """
        from core.training.lora import save_adapter

        directory = Path(directory)
        if not directory.is_dir():
            raise FileNotFoundError(
                f"{directory} does not exist (create an empty directory first)."
            )
        if any(directory.iterdir()):
            raise FileExistsError(f"{directory} is not empty.")
        if self.kind == "adapter":
            target = directory / "adapter"
            target.mkdir()
            save_adapter(self.model, target)
        elif not _fits_base(self.model, self.base_encoder):  # another architecture: whole
            self.save_full(directory)
            return
        else:
            from safetensors.torch import save_file

            target = directory / LAYERS_DIR
            target.mkdir()
            save_file(changed_layers(self.model, self.base_encoder), str(target / LAYERS_FILE))
        (directory / MODEL_JSON).write_text(json.dumps(self.metadata(), indent=2, sort_keys=True))
        logger.info("saved %s model to %s", self.kind, directory)

    def save_full(self, directory: Path) -> None:
        """Write the whole model as a kind ``"full"`` artifact (a sentence-transformers folder):
        what a bundle carries, which runs without the base encoder's package."""
        directory = Path(directory)
        self.model.save(
            str(directory / "encoder"), create_model_card=False, safe_serialization=True
        )
        meta = {**self.metadata(), "kind": "full"}
        meta.pop("base_fingerprint", None)
        meta.pop("precision", None)
        (directory / MODEL_JSON).write_text(json.dumps(meta, indent=2, sort_keys=True))
        logger.info("saved the whole model to %s", directory)


def _base_state(base: str, device: str) -> dict[str, Any]:
    from core.encoding.registry import load_encoder

    return dict(load_encoder(base, device=device).model.state_dict())


def _fits_base(model: SentenceTransformer, base: str) -> bool:
    """Whether ``model`` has exactly its base encoder's tensors (names and shapes): then it is
    stored as the ones it changed."""
    device = str(next(model.parameters()).device)
    theirs = _base_state(base, "cuda" if device.startswith("cuda") else "cpu")
    ours = model.state_dict()
    return set(ours) == set(theirs) and all(ours[k].shape == theirs[k].shape for k in ours)


def changed_layers(model: SentenceTransformer, base: str) -> dict[str, Any]:
    """The tensors of ``model`` that differ from its ``base`` encoder's (the layers training
    moved; a frozen layer is bit for bit the base's and is left out), rounded to fp16 in place
    (a tensor fp16 cannot hold keeps fp32): the model in memory is then exactly what is saved,
    so what is measured is what serves. On MiniLM with 3 of 6 layers tuned: 10.6 MB instead
    of 90 MB (issue 71 item 4)."""
    import torch

    device = str(next(model.parameters()).device)
    base_state = _base_state(base, "cuda" if device.startswith("cuda") else "cpu")
    changed: dict[str, Any] = {}
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            theirs = base_state.get(name)
            if theirs is not None and _same(theirs, tensor):
                continue
            if tensor.is_floating_point():
                half = tensor.to(torch.float16)
                if torch.isfinite(half).all():
                    tensor.copy_(half.to(tensor.dtype))
                    changed[name] = half.cpu().contiguous()
                    continue
            changed[name] = tensor.detach().cpu().contiguous()
    return changed


def read_metadata(directory: Path) -> dict[str, Any]:
    """Read and check ``model.json`` of an artifact directory.

    Raises:
        ValueError: when it is missing, of another format, or inconsistent.
    """
    path = Path(directory) / MODEL_JSON
    if not path.is_file():
        raise ValueError(f"{directory} is not a trained model: {MODEL_JSON} is missing.")
    meta = json.loads(path.read_text())
    if meta.get("format") != FORMAT:
        raise ValueError(f"Unsupported model format {meta.get('format')!r} (expected {FORMAT}).")
    kind = meta.get("kind")
    if kind not in KINDS:
        raise ValueError(f"Unknown model kind {kind!r}.")
    sub = Path(directory) / KINDS[kind]
    if not sub.is_dir():
        raise ValueError(f"{directory}: the {sub.name}/ folder is missing.")
    return dict(meta)


def stored_max_length(meta: dict[str, Any]) -> int:
    """The tokens per utterance a version was trained with, read from its ``model.json`` as
    stored: a version trained with an option that has since left :class:`TrainConfig` (which
    :meth:`TrainConfig.from_dict` refuses) must still load and serve."""
    return int((meta.get("config") or {}).get("max_length", TrainConfig.max_length))


# Folders a retrain adds to a version after its encoder was loaded and evaluated (the multi-label
# head, core.multilabel.head.HEAD_DIR; the int8 copy, app.serving.int8.INT8_DIR): they do not
# change the encoder's vectors, so its fingerprint (the embedding cache's key) leaves them out.
DERIVED_DIRS = ("head", "onnx")


def artifact_sha256(directory: Path, skip: tuple[str, ...] = ()) -> str:
    """sha256 over every file of the artifact (relative path and content), in sorted order,
    leaving out the top-level folders ``skip``."""
    h = hashlib.sha256()
    root = Path(directory)
    files = (p for p in root.rglob("*") if p.is_file())
    for f in sorted(p for p in files if p.relative_to(root).parts[0] not in skip):
        h.update(f.relative_to(root).as_posix().encode())
        h.update(b"\0")
        with f.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def _refuse_code(folder: Path) -> None:
    pickled = [p.name for p in folder.rglob("*") if p.suffix in _PICKLE_SUFFIXES]
    if pickled:
        raise ValueError(f"Refusing to load pickled weights: {', '.join(sorted(pickled))}.")
    modules = folder / "modules.json"
    if modules.is_file():
        for entry in json.loads(modules.read_text()):
            if not str(entry.get("type", "")).startswith("sentence_transformers."):
                raise ValueError(f"Refusing to load module type {entry.get('type')!r}.")
    for cfg in folder.rglob("config.json"):
        data = json.loads(cfg.read_text())
        act = data.get("activation_function")
        if isinstance(act, str) and not act.startswith("torch."):
            raise ValueError(f"Refusing activation {act!r} in {cfg.parent.name}.")
        if data.get("auto_map"):
            raise ValueError(f"Refusing {cfg.parent.name}: it needs remote code (auto_map).")


def load_trained_model(directory: Path, device: str | None = None) -> SentenceTransformer:
    """Load the SentenceTransformer of an artifact directory (adapters merged into a fresh base)."""
    from core.encoding.registry import default_device, load_sentence_transformer, resolve_path
    from core.training.lora import attach_saved_adapter

    directory = Path(directory)
    meta = read_metadata(directory)
    device = device or default_device()
    if meta["kind"] == "layers":
        model = _with_layers(directory, meta, device)
    elif meta["kind"] == "full":
        folder = directory / "encoder"
        _refuse_code(folder)
        model = load_sentence_transformer(folder, device)
    else:
        folder = directory / "adapter"
        _refuse_code(folder)
        if not (folder / "adapter_model.safetensors").is_file():
            raise ValueError(f"{directory}: adapter/adapter_model.safetensors is missing.")
        model = load_sentence_transformer(resolve_path(meta["base_encoder"]), device)
        attach_saved_adapter(model, folder)
    model.max_seq_length = stored_max_length(meta)
    model.eval()
    return model


def load_trained(directory: Path, device: str | None = None) -> Encoder:
    """Load an artifact directory as an :class:`core.encoding.registry.Encoder`: the one reader
    of a version's encoder, old versions included (an older version's separate label encoder
    becomes its ``anchors``, :func:`load_label_encoder`).

    Example:
        >>> enc = load_trained(Path("models/v3"))  # doctest: +SKIP
        >>> enc.fingerprint  # doctest: +SKIP
        'convfit@4f1c2a9e0b7d55aa'
    """
    from core.encoding.registry import encoder_from_model

    meta = read_metadata(Path(directory))
    model = load_trained_model(Path(directory), device)
    fingerprint = artifact_fingerprint(Path(directory), meta["method"])
    encoder = encoder_from_model(model, f"{meta['base_encoder']}+{meta['method']}", fingerprint)
    encoder.anchors = load_label_encoder(Path(directory), device)
    return encoder


def _same(a: Any, b: Any) -> bool:
    import torch

    return bool(a.shape == b.shape and torch.equal(a.to(b.device), b))


def _with_layers(directory: Path, meta: dict[str, Any], device: str) -> SentenceTransformer:
    """A ``"layers"`` artifact's model: a copy of the process's base encoder with the tuned
    tensors put in. Refused when the base installed here is not the one it was tuned from."""
    import copy

    import torch
    from safetensors.torch import load_file

    from core.encoding.registry import base_fingerprint, load_encoder

    base = str(meta["base_encoder"])
    here = base_fingerprint(base)
    if meta.get("base_fingerprint") != here:
        raise ValueError(
            f"{directory.name} was tuned from {meta.get('base_fingerprint')}, but this machine's "
            f"{base} is {here}: install the encoder it was tuned from, or retrain."
        )
    _refuse_code(directory / LAYERS_DIR)
    tensors = load_file(str(directory / LAYERS_DIR / LAYERS_FILE), device="cpu")
    model = copy.deepcopy(load_encoder(base, device=device).model)
    state = model.state_dict()
    unknown = sorted(set(tensors) - set(state))
    if unknown:
        raise ValueError(f"{directory.name}: tensors the base encoder does not have: {unknown[:3]}")
    with torch.no_grad():
        for name, tensor in tensors.items():
            if state[name].shape != tensor.shape:
                raise ValueError(f"{directory.name}: {name} has another shape than the base's.")
            state[name].copy_(tensor.to(state[name].dtype))
    for p in model.parameters():
        p.requires_grad_(False)
    return model


def full_artifact(directory: Path, out: Path, device: str | None = None) -> Path:
    """``directory`` as a kind ``"full"`` artifact: itself when it is one (or an adapter), else
    the whole model written into ``out`` (which must not exist): what a bundle carries."""
    directory = Path(directory)
    meta = read_metadata(directory)
    if meta["kind"] != "layers":
        return directory
    out.mkdir(parents=True)
    config = TrainConfig.from_dict(meta["config"]) if meta.get("config") else TrainConfig()
    trained = TrainedModel(load_trained_model(directory, device), meta["base_encoder"], config)
    trained.save_full(out)
    return out


def artifact_fingerprint(directory: Path, method: str) -> str:
    """The embedding cache's key of an artifact's encoder: its method and the hash of its files
    less :data:`DERIVED_DIRS`."""
    return f"{method}@{artifact_sha256(directory, DERIVED_DIRS)[:16]}"


def load_label_encoder(directory: Path, device: str | None = None) -> Encoder | None:
    """The separate encoder of an artifact's anchors: the label encoder of a version trained
    with one (an option that has left :class:`TrainConfig`), which embeds the intents' names and
    descriptions; None when the version's own encoder embeds them (every version trained since).
    :func:`load_trained` sets it as its encoder's ``anchors``, and the int8 copy of such a version
    gets it too (:meth:`app.serving.models.Models.serving_encoder`).

    Raises:
        ValueError: when the version was trained with one but ``label_encoder/`` is missing
            (its anchors would silently land in the wrong space).
    """
    from core.encoding.registry import default_device, encoder_from_model, load_sentence_transformer

    directory = Path(directory)
    meta = read_metadata(directory)
    if (meta.get("config") or {}).get("label_encoder", "shared") != "separate":
        return None
    folder = directory / LABEL_DIR
    if not folder.is_dir():
        raise ValueError(
            f"{directory}: trained with a separate label encoder, but {LABEL_DIR}/ is missing."
        )
    _refuse_code(folder)
    model = load_sentence_transformer(folder, device or default_device())
    model.max_seq_length = stored_max_length(meta)
    model.eval()
    fingerprint = f"{meta['method']}-label@{artifact_sha256(directory)[:16]}"
    return encoder_from_model(model, f"{meta['base_encoder']}+{meta['method']}+label", fingerprint)
