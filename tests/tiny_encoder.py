"""A tiny sentence encoder built in the test session (issue 67 item 7), for the tests that need
*an* encoder, not a good one: the code paths of encoding, training, saving, measuring, serving
and exporting, at a fraction of MiniLM's cost (as sentence-transformers' own tests use
``stsb_bert_tiny_model_reused``).

It is MiniLM's tokenizer (the same word pieces, so texts are cut the same way) over a BERT of
four layers of width 32 (a retrain freezes the lowest three), with random weights from a fixed
seed, mean pooling and normalisation: the same modules as MiniLM, every vector 32-d. Nothing is downloaded. Registered in the encoder
registry as :data:`NAME` (:func:`spec`; the ``tiny_encoder`` fixture, for one test at a time), so a project can be made on it like on any other
(``base_encoder="tiny"``). Its predictions mean nothing: a test that asserts what a model learns
or how well it answers keeps MiniLM.

Example:
    >>> from core.encoding.registry import load_encoder  # doctest: +SKIP
    >>> register(spec(build(tmp_path)))  # doctest: +SKIP
    >>> load_encoder(NAME, device="cpu").dim  # doctest: +SKIP
    32
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.encoding.registry import EncoderSpec

NAME = "tiny"
_lock = threading.Lock()


def build(folder: Path) -> Path:
    """Write the tiny encoder into ``folder`` (once) and return its sentence-transformers folder."""
    target = folder / NAME
    with _lock:
        if (target / "modules.json").is_file():
            return target
        import torch
        from sentence_transformers import SentenceTransformer
        from sentence_transformers.sentence_transformer.modules import (
            Normalize,
            Pooling,
            Transformer,
        )
        from transformers import AutoTokenizer, BertConfig, BertModel

        from core.encoding.registry import MAX_SEQ_LENGTH, registered_path

        raw = folder / f"{NAME}-bert"
        tokenizer = AutoTokenizer.from_pretrained(str(registered_path("minilm")))
        torch.manual_seed(0)
        config = BertConfig(
            vocab_size=tokenizer.vocab_size,
            hidden_size=32,
            num_hidden_layers=4,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=2 * MAX_SEQ_LENGTH,
        )
        BertModel(config).save_pretrained(str(raw))
        tokenizer.save_pretrained(str(raw))
        word = Transformer(str(raw), max_seq_length=MAX_SEQ_LENGTH)
        pooling = Pooling(word.get_embedding_dimension(), "mean")
        model = SentenceTransformer(modules=[word, pooling, Normalize()], device="cpu")
        model.save(str(target))
        return target


def spec(path: Path) -> EncoderSpec:
    """The registry's entry for the tiny encoder built at ``path`` (:func:`build`)."""
    from core.encoding.registry import EncoderSpec

    return EncoderSpec(NAME, "a tiny random BERT for tests (32-d, 4 layers)", lambda: path)
