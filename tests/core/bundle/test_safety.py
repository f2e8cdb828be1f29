"""Hostile and broken bundles are refused with a clear error and nothing lands outside a temp dir."""

from __future__ import annotations

import hashlib
import json
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from core.bundle import BundleError, load, open_bundle, write_bundle
from core.bundle.safety import check_bundle_file, check_encoder_folder


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    """A valid bundle with made-up vectors (no encoder needed to open it)."""
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(4, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)  # an encoder's unit vectors
    return write_bundle(
        tmp_path_factory.mktemp("good") / "good.zip",
        encoder_dir=None,
        base_encoder="minilm",
        exemplar_texts=["hi", "hello", "bye", "see you"],
        exemplar_labels=[("greet",), ("greet",), ("bye",), ("bye",)],
        vectors=vecs,
        manifest_fields={"project": "t"},
    )


def _members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def _rewrite(src: Path, dst: Path, mutate: Callable[[dict[str, bytes]], None]) -> Path:
    members = _members(src)
    mutate(members)
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return dst


def _set_manifest(members: dict[str, bytes], **changes) -> None:
    manifest = json.loads(members["manifest.json"])
    manifest.update(changes)
    members["manifest.json"] = json.dumps(manifest).encode()


@pytest.fixture
def own_tmp(tmp_path, monkeypatch) -> None:
    """This test's own temporary directory for the process: the other pytest worker (and any
    other process) extracts bundles into the shared one meanwhile, whose folders a count of
    ``intent-bundle-*`` there would find (CI saw one come and go during a refusal)."""
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))


def _bundle_dirs() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("intent-bundle-*")}


def test_good_bundle_opens(good):
    contents = open_bundle(good)
    assert contents.texts == ["hi", "hello", "bye", "see you"]
    contents.cleanup()


def test_tampered_file_is_refused(good, tmp_path, own_tmp):
    def tamper(m: dict[str, bytes]) -> None:
        m["exemplars.jsonl"] = m["exemplars.jsonl"].replace(b'"greet"', b'"bye"', 1)

    before = _bundle_dirs()
    with pytest.raises(BundleError, match=r"exemplars.jsonl' has been modified"):
        open_bundle(_rewrite(good, tmp_path / "t.zip", tamper))
    assert _bundle_dirs() == before  # the temporary folder was removed


def test_missing_file_is_refused(good, tmp_path):
    with pytest.raises(BundleError, match=r"missing 'vectors.npy'"):
        open_bundle(_rewrite(good, tmp_path / "m.zip", lambda m: m.pop("vectors.npy")))


def test_unlisted_file_is_refused(good, tmp_path):
    def add(m: dict[str, bytes]) -> None:
        m["extra.json"] = b"{}"

    with pytest.raises(BundleError, match=r"not listed in its manifest: extra\.json"):
        open_bundle(_rewrite(good, tmp_path / "u.zip", add))


def test_manifest_missing(good, tmp_path):
    with pytest.raises(BundleError, match=r"manifest\.json is missing"):
        open_bundle(_rewrite(good, tmp_path / "n.zip", lambda m: m.pop("manifest.json")))


def test_unknown_format(good, tmp_path):
    with pytest.raises(BundleError, match="Unknown bundle_format 99"):
        open_bundle(
            _rewrite(good, tmp_path / "f.zip", lambda m: _set_manifest(m, bundle_format=99))
        )


def test_not_a_zip(tmp_path):
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"not a zip at all")
    with pytest.raises(BundleError, match="not a readable zip"):
        open_bundle(bad)


def test_generic_archive_refusals_come_back_as_bundle_errors(good, tmp_path, own_tmp):
    """Names, symlinks and bombs are core.safe_archive's rules (tests/core/test_safe_archive.py);
    a bundle reports them as BundleError and keeps no temporary folder."""

    def add(m: dict[str, bytes]) -> None:
        m["../../evil.json"] = b"{}"

    before = _bundle_dirs()
    with pytest.raises(BundleError, match=r"'\.\.'"):
        open_bundle(_rewrite(good, tmp_path / "p.zip", add))
    assert _bundle_dirs() == before
    assert not (tmp_path / "evil.json").exists()


def test_pickle_member_is_refused(good, tmp_path):
    def add(m: dict[str, bytes]) -> None:
        m["encoder/pytorch_model.bin"] = b"\x80\x04K\x01."

    with pytest.raises(BundleError, match="pickled weights are never loaded"):
        open_bundle(_rewrite(good, tmp_path / "k.zip", add))


@pytest.mark.parametrize("name", ["encoder/modeling_evil.py", "onnx/predict.py", "run.py"])
def test_code_member_is_refused(good, tmp_path, name):
    """Code is refused, but for the bundle's own predict.py at its root (for its user to run;
    nothing in the app runs or imports it): the same file anywhere else is refused."""

    def add(m: dict[str, bytes]) -> None:
        m[name] = b"import os"

    with pytest.raises(BundleError, match=r"file type '\.py' not allowed"):
        open_bundle(_rewrite(good, tmp_path / "c.zip", add))
    check_bundle_file("predict.py")


def test_zip_bomb_by_total_size(good):
    with pytest.raises(BundleError, match="zip bomb"):
        open_bundle(good, max_bytes=100)


def test_wrong_vectors_are_refused(good, tmp_path):
    def swap(m: dict[str, bytes]) -> None:
        import io

        buf = io.BytesIO()
        np.save(buf, np.zeros((4, 8), dtype=np.float64))
        m["vectors.npy"] = buf.getvalue()
        manifest = json.loads(m["manifest.json"])
        manifest["files"]["vectors.npy"] = hashlib.sha256(buf.getvalue()).hexdigest()
        m["manifest.json"] = json.dumps(manifest).encode()

    with pytest.raises(BundleError, match="float32"):
        open_bundle(_rewrite(good, tmp_path / "v.zip", swap))


def test_pickled_object_array_is_never_unpickled(good, tmp_path):
    def swap(m: dict[str, bytes]) -> None:
        import io

        buf = io.BytesIO()
        np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
        m["vectors.npy"] = buf.getvalue()
        manifest = json.loads(m["manifest.json"])
        manifest["files"]["vectors.npy"] = hashlib.sha256(buf.getvalue()).hexdigest()
        m["manifest.json"] = json.dumps(manifest).encode()

    with pytest.raises(BundleError, match="not a plain numeric array"):
        open_bundle(_rewrite(good, tmp_path / "o.zip", swap))


def test_encoder_naming_foreign_modules_is_refused(good, tmp_path):
    """A full bundle whose modules.json names a non-sentence-transformers class is not loaded."""
    modules = json.dumps([{"idx": 0, "name": "0", "path": "", "type": "os.system"}]).encode()

    def add(m: dict[str, bytes]) -> None:
        m["encoder/modules.json"] = modules
        m["encoder/model.safetensors"] = b"{}"
        manifest = json.loads(m["manifest.json"])
        manifest["encoder_kind"] = "full"
        for name in ("encoder/modules.json", "encoder/model.safetensors"):
            manifest["files"][name] = hashlib.sha256(m[name]).hexdigest()
        m["manifest.json"] = json.dumps(manifest).encode()

    with pytest.raises(BundleError, match="not a sentence-transformers module"):
        load(_rewrite(good, tmp_path / "e.zip", add), device="cpu")


def test_check_encoder_folder_refuses_remote_code(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"")
    (tmp_path / "config.json").write_text(json.dumps({"auto_map": {"AutoModel": "x.Y"}}))
    with pytest.raises(BundleError, match="remote code"):
        check_encoder_folder(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"activation_function": "os.system"}))
    with pytest.raises(BundleError, match="not a torch one"):
        check_encoder_folder(tmp_path)


def _swap_file(m: dict[str, bytes], name: str, data: bytes) -> None:
    """Replace a member and its hash in the manifest (a forger who rehashes)."""
    m[name] = data
    manifest = json.loads(m["manifest.json"])
    manifest["files"][name] = hashlib.sha256(data).hexdigest()
    m["manifest.json"] = json.dumps(manifest).encode()


def _npy(array: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


@pytest.mark.parametrize(
    ("vectors", "says"),
    [
        (np.zeros((4, 8), dtype=np.float32), "first row 0 has length 0"),
        (np.full((4, 8), 1e30, dtype=np.float32), "has length 2.83e+30"),
        (
            (np.eye(4, 8) * [[1], [1], [0.5], [1]]).astype(np.float32),
            "1 row(s) are not, the first row 2",
        ),
    ],
)
def test_vectors_that_are_not_unit_length_are_refused(good, tmp_path, vectors, says):
    """Issue 27 row 13: all-zero or 1e30 vectors loaded and predicted nonsense."""
    bad = _rewrite(good, tmp_path / "z.zip", lambda m: _swap_file(m, "vectors.npy", _npy(vectors)))
    with pytest.raises(BundleError, match=r"vectors\.npy should hold unit vectors") as err:
        open_bundle(bad)
    assert says in str(err.value)


def _exemplars(rows: list[tuple[str, list[str]]]) -> bytes:
    return "".join(json.dumps({"text": t, "labels": lab}) + "\n" for t, lab in rows).encode()


GOOD_ROWS = [("hi", ["greet"]), ("hello", ["greet"]), ("bye", ["bye"]), ("see you", ["bye"])]


@pytest.mark.parametrize(
    ("mutate", "says"),
    [
        (lambda m: _set_manifest(m, n_exemplars=40), "n_exemplars=40; exemplars.jsonl has 4"),
        (lambda m: _set_manifest(m, dim=384), "dim=384; vectors.npy has 8"),
        (
            lambda m: _set_manifest(m, intents={"greet": 2, "bye": 2, "ghost": 0}),
            "'intents' lists intent(s) no exemplar has: ['ghost']",
        ),
        (
            lambda m: _swap_file(
                m,
                "labels.json",
                json.dumps(
                    {
                        "labels": ["bye", "ghost", "greet"],
                        "counts": {"bye": 2, "ghost": 1, "greet": 2},
                    }
                ).encode(),
            ),
            "labels.json 'counts' lists intent(s) no exemplar has: ['ghost']",
        ),
        (
            lambda m: _swap_file(
                m, "exemplars.jsonl", _exemplars([*GOOD_ROWS[:3], ("see you", ["eleventh"])])
            ),
            "exemplars.jsonl has intent(s) manifest.json 'intents' does not list: ['eleventh']",
        ),
        (
            lambda m: _set_manifest(m, intents={"greet": 3, "bye": 2}),
            "says 'greet' has 3 exemplar(s); exemplars.jsonl has 2",
        ),
    ],
)
def test_a_manifest_that_lies_about_the_files_is_refused_saying_which(good, tmp_path, mutate, says):
    """Issue 27 row 13: counts, dims and labels that lie, a ghost label, and an exemplar whose
    label is not listed (it became an 11th intent) all loaded."""
    with pytest.raises(BundleError) as err:
        open_bundle(_rewrite(good, tmp_path / "m.zip", mutate))
    assert says in str(err.value)
