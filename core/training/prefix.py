"""Frozen lower layers computed once: the token states after them are cached per utterance.

With the token embeddings and the lowest ``n`` transformer layers frozen
(``TrainConfig.freeze_layers``), what those layers output for an utterance never changes during
training, yet every step used to run them again for every text of the batch. :func:`cached_prefix`
computes each training text's states once (no gradients, dropout off) and, while training runs,
swaps the model's embedding module for a lookup of those states and its layer stack for the
trainable upper layers only. The model's own forward still builds the attention mask, runs the
upper layers, pools and normalises, so every embedding path (the loop's length-sorted chunks, a
pair loss's features) goes through it unchanged. On MiniLM
with 3 of 6 layers frozen this roughly halves the forward pass of a step.

Only BERT-like models qualify (``embeddings`` and ``encoder.layer`` on the Hugging Face model,
MiniLM and MPNet among them); for others, or with nothing frozen, training runs as before.

The difference to the uncached forward: the frozen layers' dropout is off (their states are the
eval-mode ones); the trainable layers keep theirs. The cache holds one float32 vector per token:
about 25 KB per MiniLM utterance of 16 tokens, 250 MB for 10,000 training texts.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from core.encoding.onednn import onednn_linears
from core.encoding.registry import Encoder

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

Key = tuple[int, ...]

# At least this many texts compute through oneDNN where this CPU runs it faster
# (:mod:`core.encoding.onednn`): swapping MiniLM's layers costs ~45 ms, 64 texts ~0.1 s.
ONEDNN_FROM = 64


class CachedPrefix(nn.Module):
    """Stands in for a model's embedding module: returns the cached states after the frozen
    layers for each row of ``input_ids`` (padded positions get zeros; the mask hides them).

    On the CPU each row is looked up by its token ids. On CUDA reading the ids back would make
    every step wait for the device, so :meth:`on_device` lays the states out as one padded tensor
    there, and a row is found by a hash of its ids computed on the device (integer arithmetic,
    :func:`_hash`) and a binary search among the cached texts' hashes."""

    def __init__(self, states: dict[Key, torch.Tensor], pad_id: int) -> None:
        super().__init__()
        self.states = states
        self.pad_id = pad_id
        self.table: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor] | None = None

    def on_device(self, device: torch.device) -> None:
        """Build the device-side table (sorted hashes, their rows, weights, padded states)."""
        keys = list(self.states)
        width = max((len(k) for k in keys), default=1)
        ids = torch.full((len(keys), width), self.pad_id, dtype=torch.long)
        for row, key in enumerate(keys):
            ids[row, : len(key)] = torch.tensor(key, dtype=torch.long)
        weights = torch.randint(1, 2**35, (width,), generator=torch.Generator().manual_seed(0))
        hashes, order = torch.sort(_hash(ids, weights, self.pad_id))
        first = next(iter(self.states.values())) if keys else torch.zeros(0, 1)
        padded = torch.zeros((len(keys), width, first.shape[-1]), dtype=first.dtype)
        for row, key in enumerate(keys):
            padded[row, : len(key)] = self.states[key].cpu()
        self.table = (hashes.to(device), order.to(device), weights.to(device), padded.to(device))

    def key(self, row: torch.Tensor) -> Key:
        ids = row.tolist()
        while ids and ids[-1] == self.pad_id:
            ids.pop()
        return tuple(ids)

    def forward(self, input_ids: torch.Tensor | None = None, **_: Any) -> torch.Tensor:
        if input_ids is None:
            raise ValueError("The cached frozen layers look utterances up by their token ids.")
        width = input_ids.shape[1]
        if self.table is not None:  # on CUDA (on_device): looked up there, nothing read back
            hashes, order, weights, padded = self.table
            at = torch.searchsorted(hashes, _hash(input_ids, weights[:width], self.pad_id))
            found = order[at.clamp(max=len(hashes) - 1)]
            return padded.index_select(0, found)[:, :width]
        rows = []
        for row in input_ids:
            key = self.key(row)
            cached = self.states.get(key)
            if cached is None:
                raise KeyError(f"No cached states for a text of {len(key)} tokens.")
            rows.append(nn.functional.pad(cached, (0, 0, 0, width - cached.shape[0])))
        return torch.stack(rows)


def _hash(ids: torch.Tensor, weights: torch.Tensor, pad_id: int) -> torch.Tensor:
    """One integer per row of token ids, the same however far the row is padded: the weighted
    sum of (id + 1) over its tokens (a pad counts 0). Ids below 2^17 and weights below 2^35 keep
    512 terms below 2^63: no overflow, the same value on every device."""
    tokens = torch.where(ids == pad_id, torch.zeros_like(ids), ids + 1)
    return (tokens * weights[: ids.shape[1]]).sum(dim=1)


def bert_parts(model: SentenceTransformer) -> tuple[Any, nn.Module, nn.ModuleList] | None:
    """The Hugging Face model, its embedding module and its layer stack, if it is BERT-like."""
    hf = getattr(model[0], "model", None)
    encoder = getattr(hf, "encoder", None)
    layers = getattr(encoder, "layer", None)
    embeddings = getattr(hf, "embeddings", None)
    if not isinstance(layers, nn.ModuleList) or not isinstance(embeddings, nn.Module):
        return None
    return hf, embeddings, layers


@torch.no_grad()
def prefix_states(
    model: SentenceTransformer,
    texts: Iterable[str],
    layers: int,
    chunk: int = 64,
    should_cancel: Callable[[], bool] | None = None,
) -> dict[Key, torch.Tensor]:
    """Each text's token states after the embeddings and the lowest ``layers`` layers, keyed by
    its token ids (unpadded, on the model's device). The model must be BERT-like (:func:`bert_parts`).
    ``should_cancel`` is polled before each chunk (True raises
    :class:`core.training.loop.TrainingCancelled`: 6,000 texts take a minute on a busy CPU)."""
    from core.training.loop import TrainingCancelled

    parts = bert_parts(model)
    if parts is None:
        raise ValueError("Cached frozen layers need a BERT-like model (embeddings, encoder.layer).")
    hf, _, stack = parts
    unique = sorted(set(texts), key=len)
    out: dict[Key, torch.Tensor] = {}
    was_training = hf.training
    hf.encoder.layer = nn.ModuleList(stack[:layers])
    hf.eval()
    try:
        fast = onednn_linears(hf) if len(unique) >= ONEDNN_FROM else contextlib.nullcontext()
        with fast:  # oneDNN's linear layers where this CPU runs them faster
            for start in range(0, len(unique), chunk):
                if should_cancel is not None and should_cancel():
                    raise TrainingCancelled(f"cancelled while caching the frozen layers ({start})")
                feats = model.preprocess(unique[start : start + chunk])
                mask = feats["attention_mask"]
                inputs = {
                    k: v.to(model.device) for k, v in feats.items() if isinstance(v, torch.Tensor)
                }
                hidden = hf(**inputs).last_hidden_state
                for row, length in enumerate(mask.sum(dim=1).tolist()):
                    key = tuple(feats["input_ids"][row, :length].tolist())
                    out[key] = hidden[row, :length].detach().clone()
    finally:
        hf.encoder.layer = stack
        hf.train(was_training)
    return out


class PrefixStates:
    """The frozen lower layers' states of texts, keyed by their token ids: valid for every model
    whose token embeddings and lowest ``layers`` layers are these weights (a training's
    checkpoints, and the base encoder they were trained from). :meth:`serving` runs a model on
    them: only its upper layers compute, for every text whose states are known (those missing
    are computed first, by the model's own lower layers)."""

    def __init__(
        self, layers: int, pad_id: int, states: dict[Key, torch.Tensor] | None = None
    ) -> None:
        self.layers, self.pad_id = layers, pad_id
        self.states: dict[Key, torch.Tensor] = states if states is not None else {}

    def fill(
        self,
        model: SentenceTransformer,
        texts: Iterable[str],
        should_cancel: Callable[[], bool] | None = None,
    ) -> int:
        """Compute the states of the texts that have none (``model`` as it is: every layer its
        own); how many were computed."""
        return len(self.take(model, texts, should_cancel)[1])

    def take(
        self,
        model: SentenceTransformer,
        texts: Iterable[str],
        should_cancel: Callable[[], bool] | None = None,
    ) -> tuple[dict[Key, torch.Tensor], list[str]]:
        """The states of ``texts`` (those missing computed first, by ``model`` as it is, and
        kept), and which texts were computed."""
        unique = list(dict.fromkeys(texts))
        if not unique:
            return {}, []
        features = model.preprocess(unique)
        ids, mask = features["input_ids"], features["attention_mask"]
        keys = [
            tuple(row[:n].tolist()) for row, n in zip(ids, mask.sum(dim=1).tolist(), strict=True)
        ]
        missing = [t for t, k in zip(unique, keys, strict=True) if k not in self.states]
        if missing:
            self.states.update(
                prefix_states(model, missing, self.layers, should_cancel=should_cancel)
            )
        return {k: self.states[k] for k in keys}, missing

    @contextmanager
    def serving(self, model: SentenceTransformer, texts: Iterable[str]) -> Iterator[None]:
        """While inside, ``model`` (one no other thread runs meanwhile) computes only its upper
        layers on the states of ``texts`` (computed first where missing). Inside an outer
        ``serving`` of the same model (an encode of one text inside an encode) the model is
        already swapped: swapping it again would drop its upper layers too, so it stays as it
        is (the outer one computed the states of its texts)."""
        parts = bert_parts(model)
        if parts is None or isinstance(parts[1], CachedPrefix):
            yield
            return
        self.fill(model, texts)
        hf, embeddings, stack = parts
        was_training = hf.training
        hf.embeddings = CachedPrefix(self.states, self.pad_id)
        hf.encoder.layer = nn.ModuleList(stack[self.layers :])
        hf.eval()
        try:
            yield
        finally:
            hf.embeddings, hf.encoder.layer = embeddings, stack
            hf.train(was_training)


class PrefixedEncoder(Encoder):
    """An :class:`~core.encoding.registry.Encoder` over ``encoder``'s model that computes only
    the model's upper layers for the texts whose frozen states ``states`` knows (a retrain's
    checkpoint measured on the texts its training already ran through the frozen layers): the
    same vectors as ``encoder``'s (its fingerprint, within float rounding), for about half the
    work, with oneDNN's linear layers where this CPU runs them faster
    (:mod:`core.encoding.onednn`). Its model must be one no other thread encodes with
    meanwhile."""

    def __init__(self, encoder: Encoder, states: PrefixStates) -> None:
        super().__init__(encoder.model, encoder.name, encoder.fingerprint)
        self.anchors = encoder.anchors
        self.states = states
        self._own = threading.Lock()

    def encode(
        self,
        texts: Sequence[str],
        *,
        batch_size: int | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> np.ndarray:
        with self._own, self.states.serving(self.model, texts):
            if len(texts) < ONEDNN_FROM:  # the layers' swap would cost more than it saves
                return super().encode(texts, batch_size=batch_size, progress=progress)
            with onednn_linears(self.model):
                return super().encode(texts, batch_size=batch_size, progress=progress)

    def _encode_one(self, text: str) -> np.ndarray:
        with self.states.serving(self.model, [text]):
            return super()._encode_one(text)


class Prefix:
    """What :func:`cached_prefix` yields: whether the cache is in use, :meth:`whole` to run
    the model as it is outside the cache for a moment (a checkpoint's copy, say), and the
    cached ``states`` (:class:`PrefixStates`; None when the cache is not in use)."""

    def __init__(self, model: SentenceTransformer, in_use: bool = False) -> None:
        self.model = model
        self.in_use = in_use
        self.states: PrefixStates | None = None
        self._swapped: tuple[Any, nn.Module, nn.ModuleList, nn.Module, nn.ModuleList] | None = None

    def __bool__(self) -> bool:
        return self.in_use

    @contextmanager
    def whole(self) -> Iterator[SentenceTransformer]:
        """The model with its own embedding module and every layer, while inside; the cached
        lookup again after."""
        if self._swapped is None:
            yield self.model
            return
        hf, embeddings, stack, prefix, upper = self._swapped
        hf.embeddings, hf.encoder.layer = embeddings, stack
        try:
            yield self.model
        finally:
            hf.embeddings, hf.encoder.layer = prefix, upper


@contextmanager
def cached_prefix(
    model: SentenceTransformer,
    texts: Iterable[str],
    layers: int,
    should_cancel: Callable[[], bool] | None = None,
    known: PrefixStates | None = None,
) -> Iterator[Prefix]:
    """While inside, ``model`` runs only its upper layers on cached states of ``texts`` (every
    text it will embed must be among them); yields a :class:`Prefix` (true when the cache is in
    use). Restores the model on the way out, also on errors and cancellation; ``should_cancel``:
    polled while the states are computed (:func:`prefix_states`). ``known``: the states of
    these frozen layers kept from before (:class:`core.training.prefix_store.PrefixStore`): only
    the texts it lacks are computed, into it, and it is what the :class:`Prefix` carries on to
    the measurements."""
    parts = bert_parts(model)
    if layers <= 0 or parts is None or layers >= len(parts[2]):
        yield Prefix(model)
        return
    hf, embeddings, stack = parts
    tokenizer = getattr(model, "tokenizer", None)
    pad_id = getattr(tokenizer, "pad_token_id", None)
    if pad_id is None:
        yield Prefix(model)
        return
    if known is not None and (known.layers, known.pad_id) == (layers, int(pad_id)):
        states, missing = known.take(model, texts, should_cancel)
        logger.info(
            "the lowest %d layers' states: %d of %d texts known",
            layers,
            len(states) - len(missing),
            len(states),
        )
    else:
        known = None
        states = prefix_states(model, texts, layers, should_cancel=should_cancel)
    prefix = CachedPrefix(states, int(pad_id))
    if torch.device(model.device).type == "cuda":
        prefix.on_device(torch.device(model.device))
    upper = nn.ModuleList(stack[layers:])
    hf.embeddings = prefix
    hf.encoder.layer = upper
    logger.info("cached the lowest %d layers' states of %d texts", layers, len(states))
    used = Prefix(model, in_use=True)
    used.states = known if known is not None else PrefixStates(layers, int(pad_id), states)
    used._swapped = (hf, embeddings, stack, prefix, upper)
    try:
        yield used
    finally:
        hf.embeddings = embeddings
        hf.encoder.layer = stack
