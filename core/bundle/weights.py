"""A bundle's weights are checked before anything loads them.

Two rules, both enforced when a bundle is opened (so a bad bundle never becomes a model version):

* The base encoder is a registry name (:func:`core.encoding.registry.registered_path`), never a
  path from the bundle; ``model.json`` must name the same one.
* Every ``.safetensors`` file has a sane header (read here with the documented format: an 8-byte
  little-endian length, then JSON; dtypes, shapes and offsets consistent, inside the file, covering
  the data without overlaps or gaps), and its tensors are exactly the base architecture's: a fully
  tuned encoder holds every tensor of the base's own state dict with the same dtype and shape; a
  LoRA adapter holds ``lora_A``/``lora_B`` for exactly the base's linear layers its config targets.
  transformers and peft would fill a missing tensor with random values and only log a warning:
  here a missing, extra or reshaped tensor, or an empty or truncated file, is a :class:`BundleError`.

Example:
    >>> import struct, tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "w.safetensors"
    >>> _ = f.write_bytes(struct.pack("<Q", 2) + b"{}")
    >>> read_header(f)
    {}
    >>> _ = f.write_bytes(b"")
    >>> read_header(f)
    Traceback (most recent call last):
    ...
    core.bundle.safety.BundleError: w.safetensors is not a safetensors file: it is empty.
"""

from __future__ import annotations

import json
import logging
import math
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.bundle.safety import BundleError, check_encoder_folder, read_json
from core.encoding.registry import LABEL_DIR

logger = logging.getLogger(__name__)

MAX_HEADER_BYTES = 100_000_000  # the safetensors library's own limit
DTYPE_BYTES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2, "F16": 2,
    "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8,
}  # fmt: skip
# config.json keys that fix the architecture: a tuned encoder must keep the base's values.
ARCHITECTURE_KEYS = (
    "model_type", "architectures", "hidden_size", "num_hidden_layers", "num_attention_heads",
    "intermediate_size", "vocab_size", "max_position_embeddings", "type_vocab_size",
    "position_embedding_type", "relative_attention_num_buckets",
)  # fmt: skip
# adapter_config.json settings that would load more (or other) tensors than plain LoRA A/B pairs.
_ADAPTER_EXTRAS = (
    "modules_to_save", "target_parameters", "layers_to_transform", "layers_pattern",
    "rank_pattern", "alpha_pattern", "use_dora", "trainable_token_indices",
)  # fmt: skip


@dataclass(frozen=True)
class Tensor:
    dtype: str
    shape: tuple[int, ...]


def read_header(path: Path) -> dict[str, Tensor]:
    """The tensors of a safetensors file, after checking its header against the file.

    Raises:
        BundleError: empty or truncated file, header length out of range, invalid JSON, an unknown
            dtype, a shape that does not match its byte range, offsets outside the data, overlapping
            or leaving gaps, or a duplicated name.
    """
    size = path.stat().st_size
    name = path.name

    def bad(why: str) -> BundleError:
        return BundleError(f"{name} is not a safetensors file: {why}.")

    if size == 0:
        raise bad("it is empty")
    if size < 8:
        raise bad(f"it is {size} bytes long, shorter than the 8-byte header length")
    with path.open("rb") as fh:
        (n,) = struct.unpack("<Q", fh.read(8))
        if n > MAX_HEADER_BYTES or n > size - 8:
            raise bad(f"its header claims {n} bytes but the file holds {size - 8} after the length")
        raw = fh.read(n)
    try:
        header = json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, ValueError) as exc:
        raise bad(f"its header is not valid JSON ({exc})") from exc
    if not isinstance(header, dict):
        raise bad("its header is not a JSON object")
    header.pop("__metadata__", None)
    data_bytes = size - 8 - n
    tensors: dict[str, Tensor] = {}
    ranges: list[tuple[int, int, str]] = []
    for key, info in header.items():
        tensor, begin, end = _tensor(key, info, bad)
        if end > data_bytes:
            raise bad(f"tensor {key!r} ends at byte {end}, past the {data_bytes} bytes of data")
        tensors[key] = tensor
        ranges.append((begin, end, key))
    position = 0
    for begin, end, key in sorted(ranges):
        if begin < position:
            raise bad(f"tensor {key!r} overlaps another tensor")
        if begin > position:
            raise bad(f"bytes {position}-{begin} before tensor {key!r} belong to no tensor")
        position = end
    if position != data_bytes:
        raise bad(f"its tensors cover {position} of the {data_bytes} bytes of data")
    return tensors


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate name {key!r}")
        out[key] = value
    return out


def _tensor(key: str, info: Any, bad: Any) -> tuple[Tensor, int, int]:
    if not isinstance(info, dict):
        raise bad(f"tensor {key!r} is not described by an object")
    dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
    if dtype not in DTYPE_BYTES:
        raise bad(f"tensor {key!r} has unknown dtype {dtype!r}")
    if not isinstance(shape, list) or not all(_natural(d) for d in shape):
        raise bad(f"tensor {key!r} has an invalid shape {shape!r}")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(_natural, offsets))):
        raise bad(f"tensor {key!r} has invalid data_offsets {offsets!r}")
    begin, end = offsets
    if end < begin or end - begin != math.prod(shape) * DTYPE_BYTES[dtype]:
        raise bad(f"tensor {key!r}: data_offsets {offsets} do not fit {dtype} {shape}")
    return Tensor(dtype, tuple(shape)), begin, end


def _natural(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def check_weights(root: Path, manifest: dict[str, Any], *, device: str | None = None) -> None:
    """Refuse a bundle whose base encoder or weights could not load exactly as the base's.

    Called by :func:`core.bundle.reader.open_bundle` after the hashes matched, so a bundle that
    passes here loads without random initialisation and without touching a host folder. The
    base encoder is loaded (once per process and ``device``) to read its own state dict.

    Raises:
        BundleError: see the module docstring; the message is one sentence for the user.
    """
    base = base_encoder_name(manifest.get("base_encoder"))
    kind = manifest["encoder_kind"]
    if (root / "model.json").is_file():
        meta = read_json(root / "model.json", dict)
        if meta.get("kind") != kind:
            raise BundleError(
                f"model.json says kind {meta.get('kind')!r} but the manifest says {kind!r}."
            )
        if meta.get("base_encoder") != base:
            raise BundleError(
                f"model.json names base encoder {meta.get('base_encoder')!r}, "
                f"the manifest {base!r}; they must agree."
            )
    elif kind == "adapter":
        raise BundleError("An adapter bundle needs model.json naming its base encoder.")
    if kind in ("base", "onnx"):  # no torch weights: a registry encoder, or the ONNX graph
        return
    sub = root / ("encoder" if kind == "full" else "adapter")
    if not sub.is_dir():
        raise BundleError(f"Bundle of kind {kind!r} has no {sub.name}/ folder.")
    reference = _Reference.of(base, device)
    if kind == "full":
        check_encoder_folder(sub)
        _check_config(read_json(sub / "config.json", dict), reference.config, base)
        _compare_files(sub, reference.files, base)
    else:
        _check_adapter(sub, reference, base)
    if (root / LABEL_DIR).is_dir():
        _check_label_encoder(root / LABEL_DIR, reference, base)


def _check_label_encoder(sub: Path, reference: _Reference, base: str) -> None:
    """A separate label encoder (older versions'; no longer trained): the base architecture, or
    its ``n`` lowest transformer layers (``num_hidden_layers`` = n, the tensors of those layers
    and nothing else)."""
    check_encoder_folder(sub)
    config = read_json(sub / "config.json", dict)
    layers = config.get("num_hidden_layers")
    most = reference.config.get("num_hidden_layers")
    if not (_natural(layers) and _natural(most) and 1 <= layers <= most):
        raise BundleError(
            f"{sub.name}/config.json sets num_hidden_layers={layers!r}: a label encoder keeps "
            f"1 to {most!r} layers of the base encoder {base!r}."
        )
    _check_config({**config, "num_hidden_layers": most}, reference.config, base)
    kept = {
        rel: {k: t for k, t in tensors.items() if _layer(k) is None or _layer(k) < layers}
        for rel, tensors in reference.files.items()
    }
    _compare_files(sub, kept, base)


def _layer(key: str) -> int | None:
    """The transformer layer a tensor belongs to (``encoder.layer.3.…`` → 3), None: none."""
    parts = key.split(".")
    for i in range(len(parts) - 2):
        if parts[i : i + 2] == ["encoder", "layer"] and parts[i + 2].isdigit():
            return int(parts[i + 2])
    return None


def base_encoder_name(name: object) -> str:
    """``name`` when it is a registry encoder that is installed here.

    Raises:
        BundleError: a path, an unknown name or an encoder not installed.
    """
    from core.encoding.registry import registered_path

    try:
        registered_path(name)
    except ValueError as exc:
        raise BundleError(str(exc)) from exc
    assert isinstance(name, str)
    return name


@dataclass(frozen=True)
class _Reference:
    """The base encoder's own tensors (per weights file), linear layers and config."""

    files: dict[str, dict[str, Tensor]]
    linear: dict[str, tuple[int, int]]
    config: dict[str, Any]

    @classmethod
    def of(cls, name: str, device: str | None = None) -> _Reference:
        import torch

        from core.encoding.registry import load_encoder, registered_path

        folder = registered_path(name)
        model = load_encoder(name, device=device).model  # cached: the app's own copy
        entries = read_json(folder / "modules.json", list)
        files: dict[str, dict[str, Tensor]] = {}
        linear: dict[str, tuple[int, int]] = {}
        for entry, module in zip(entries, model, strict=True):
            inner = getattr(module, "model", None) or module  # a Transformer's own model
            state = inner.state_dict()
            if state:
                rel = "/".join(p for p in (str(entry.get("path") or ""), "model.safetensors") if p)
                files[rel] = {k: Tensor(_dtype(v), tuple(v.shape)) for k, v in state.items()}
            if inner is not module:  # the transformer: where LoRA adapters attach
                for mod_name, mod in inner.named_modules():
                    if isinstance(mod, torch.nn.Linear):
                        linear[mod_name] = (mod.out_features, mod.in_features)
        return cls(files, linear, read_json(folder / "config.json", dict))


def _dtype(tensor: Any) -> str:
    names = {
        "float32": "F32", "float16": "F16", "bfloat16": "BF16", "float64": "F64", "int64": "I64",
        "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8", "bool": "BOOL",
    }  # fmt: skip
    return names.get(str(tensor.dtype).removeprefix("torch."), str(tensor.dtype))


def _check_config(config: dict[str, Any], base_config: dict[str, Any], base: str) -> None:
    for key in ARCHITECTURE_KEYS:
        if key in base_config and config.get(key) != base_config[key]:
            raise BundleError(
                f"The encoder's config.json sets {key}={config.get(key)!r}, but the base "
                f"encoder {base!r} has {base_config[key]!r}."
            )


def _compare_files(sub: Path, expected: dict[str, dict[str, Tensor]], base: str) -> None:
    present = {p.relative_to(sub).as_posix(): p for p in sub.rglob("*.safetensors")}
    for rel in sorted(set(present) - set(expected)):
        raise BundleError(f"{sub.name}/{rel} holds weights the base encoder {base!r} has not.")
    for rel, want in sorted(expected.items()):
        if rel not in present:
            raise BundleError(f"The encoder's weights {sub.name}/{rel} are missing.")
        _compare(f"{sub.name}/{rel}", read_header(present[rel]), want, base)


def _compare(label: str, got: dict[str, Tensor], want: dict[str, Tensor], base: str) -> None:
    missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
    if missing:
        raise BundleError(
            f"{label} lacks {len(missing)} tensor(s) of the base encoder {base!r} "
            f"(first: {missing[0]!r}); they would load as random weights."
        )
    if extra:
        raise BundleError(
            f"{label} holds {len(extra)} tensor(s) the base encoder {base!r} has not "
            f"(first: {extra[0]!r})."
        )
    for key, tensor in want.items():
        if got[key] != tensor:
            raise BundleError(
                f"{label}: tensor {key!r} is {got[key].dtype} {list(got[key].shape)}, the base "
                f"encoder {base!r} has {tensor.dtype} {list(tensor.shape)}."
            )


def _check_adapter(sub: Path, reference: _Reference, base: str) -> None:
    config = read_json(sub / "adapter_config.json", dict)
    if config.get("peft_type") != "LORA":
        raise BundleError(
            f"adapter_config.json: peft_type {config.get('peft_type')!r} is not LORA."
        )
    targets, r = config.get("target_modules"), config.get("r")
    if not (isinstance(targets, list) and targets and all(isinstance(t, str) for t in targets)):
        raise BundleError("adapter_config.json: target_modules must be a list of module names.")
    if not _natural(r) or r == 0:
        raise BundleError(f"adapter_config.json: r must be a positive integer, not {r!r}.")
    for key in _ADAPTER_EXTRAS:
        if config.get(key):
            raise BundleError(f"adapter_config.json sets {key}; only plain LoRA adapters load.")
    modules = {
        name: shape
        for name, shape in reference.linear.items()
        if any(name == t or name.endswith("." + t) for t in targets)
    }
    if not modules:
        raise BundleError(
            f"adapter_config.json targets {targets}, no linear layer of the base encoder {base!r}."
        )
    want = {  # peft's names for the A (r x in) and B (out x r) matrices of each targeted layer
        f"base_model.model.{name}.lora_{part}.weight": Tensor("F32", shape)
        for name, (out_f, in_f) in modules.items()
        for part, shape in (("A", (r, in_f)), ("B", (out_f, r)))
    }
    _compare_files(sub, {"adapter_model.safetensors": want}, base)
