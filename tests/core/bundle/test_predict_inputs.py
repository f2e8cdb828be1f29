"""Issue 74 item 4: a bundle's ``predict.py`` answers every malformed input in one line on stderr and
exits 2, never with a traceback and never by exiting 0 with nothing said (binary on stdin gave a
``UnicodeDecodeError`` traceback; an empty input exited 0 saying nothing). The bundle here has a
real ONNX encoder, a tiny one built for the test (a word-embedding lookup averaged over the
tokens), so the good input it is held against is answered."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from core.bundle import write_bundle
from core.bundle.inputs import MAX_TEXT_CHARS
from core.bundle.onnx_encoder import OnnxEncoder
from storage.texts import MAX_TEXT_CHARS as APP_MAX_TEXT_CHARS

from .test_standalone import only_the_runtime

pytestmark = pytest.mark.fast

WORDS = ["[UNK]", "[PAD]", "lost", "my", "card", "hello", "hi", "there", "stolen", "wallet"]
POOL = [
    ("I lost my card", "card_lost"),
    ("my card was stolen", "card_lost"),
    ("hello there", "greet"),
    ("hi", "greet"),
]


def tiny_onnx(folder: Path, dim: int = 8) -> Path:
    """An ONNX encoder folder: a WordLevel tokenizer and a graph that averages the word vectors
    of a text (``sentence_embedding``), with the config :class:`OnnxEncoder` reads."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from tokenizers import Tokenizer, models, pre_tokenizers

    folder.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(folder / "tokenizer.json"))
    table = np.random.default_rng(0).normal(size=(len(WORDS), dim)).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("Gather", ["table", "input_ids"], ["words"]),
            helper.make_node("ReduceMean", ["words"], ["sentence_embedding"], axes=[1], keepdims=0),
        ],
        "tiny",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["b", "s"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["b", "s"]),
        ],
        [helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["b", dim])],
        [numpy_helper.from_array(table, "table")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(folder / "model.onnx"))
    config = {
        "format": 1,
        "inputs": ["input_ids", "attention_mask"],
        "max_seq_length": 32,
        "pad_id": 1,
        "dim": dim,
        "model": "model.onnx",
        "precision": "fp32",
        "source": "tiny",
    }
    (folder / "onnx_config.json").write_text(json.dumps(config))
    return folder


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    """An unzipped bundle with the tiny encoder and its predict.py."""
    tmp = tmp_path_factory.mktemp("predict-inputs")
    onnx_dir = tiny_onnx(tmp / "onnx")
    texts = [t for t, _ in POOL]
    path = write_bundle(
        tmp / "b.zip",
        encoder_dir=None,
        base_encoder="minilm",
        exemplar_texts=texts,
        exemplar_labels=[(label,) for _, label in POOL],
        vectors=OnnxEncoder(onnx_dir).encode(texts),
        manifest_fields={},
        extra_files={"onnx": onnx_dir},
        onnx_only=True,
    )
    folder = tmp / "unzipped"
    with zipfile.ZipFile(path) as zf:
        zf.extractall(folder)
    return folder


def predict(
    bundle: Path, args: list[str | bytes], stdin: bytes | None = b""
) -> subprocess.CompletedProcess[bytes]:
    """``python -S predict.py ARGS < STDIN`` in a bare environment (numpy, onnxruntime and
    tokenizers alone)."""
    return subprocess.run(
        [sys.executable, "-S", str(bundle / "predict.py"), "--threads", "1", *args],
        input=stdin,
        capture_output=True,
        timeout=120,
        env=only_the_runtime(bundle.parent),
        cwd=bundle.parent,
    )


def test_good_input_is_answered(bundle):
    done = predict(bundle, [], b"I lost my card\n\nhello there\r\n")
    assert done.returncode == 0, done.stderr.decode()
    lines = done.stdout.decode().splitlines()
    assert [line.split("\t")[:2] for line in lines] == [
        ["I lost my card", "card_lost"],
        ["hello there", "greet"],
    ]
    assert predict(bundle, ["--json", "my card was stolen"]).returncode == 0


MALFORMED = {
    "binary on stdin": ([], bytes(range(256)) * 64, "line 1 of the input holds a NUL byte"),
    "an empty input": ([], b"", "no text to classify"),
    "blank lines only": ([], b"\n  \n\t\r\n", "no text to classify"),
    "a 10 MB line": (
        [],
        b"a" * 10_000_000 + b"\n",
        f"line 1 of the input is longer than {MAX_TEXT_CHARS:,} characters",
    ),
    "Latin-1 text": (
        [],
        "un caf\u00e9 cr\u00e8me\n".encode("latin-1"),
        "line 1 of the input is not UTF-8",
    ),
    "UTF-16 text": ([], "hello there\n".encode("utf-16"), "the input is UTF-16"),
    "an empty argument": ([""], None, "argument 1 is empty"),
    "an argument that is not UTF-8": ([b"caf\xe9"], None, "argument 1 is not UTF-8 text"),
    "a text over the limit": (["x" * (MAX_TEXT_CHARS + 1)], None, "argument 1 is longer than"),
    "a bad --threads": (["--threads", "0", "hi"], None, "--threads"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_input_is_said_in_one_line_and_exits_2(bundle, case):
    args, stdin, said = MALFORMED[case]
    done = predict(bundle, args, stdin)
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 2, (done.returncode, err[-2000:])
    assert "Traceback" not in err
    assert done.stdout == b""
    assert len(err.strip().splitlines()) == 1, err[-2000:]
    assert err.startswith("predict.py: ") and said in err, err


def test_the_limit_on_a_text_is_the_apps():
    assert MAX_TEXT_CHARS == APP_MAX_TEXT_CHARS
