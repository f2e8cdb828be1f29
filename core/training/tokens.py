"""Every training text tokenised once, its token tensors on the training device.

The loop used to tokenise each step's texts again (every text is seen once per pass) and copy
the tensors to the device every step. :class:`TokenBank` tokenises the run's distinct texts
once, keeps ``input_ids``, ``attention_mask`` (and ``token_type_ids``) on the model's device, and
gives a batch's features by gathering its rows there, cut to the batch's longest text, which is
exactly what tokenising the batch alone gives (padding to its own longest text). The lengths stay
on the host, so choosing a batch's width never waits for the device; the row numbers travel from
pinned memory without blocking on CUDA.

Example:
    >>> bank = TokenBank(model, ["hi", "where is my card"])  # doctest: +SKIP
    >>> bank.features(bank.rows(["hi"]))["input_ids"].shape  # doctest: +SKIP
    torch.Size([1, 3])
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer


class TokenBank:
    """The distinct ``texts`` tokenised by ``model`` (see the module)."""

    def __init__(self, model: SentenceTransformer, texts: Iterable[str]) -> None:
        unique = list(dict.fromkeys(texts))
        self.row = {text: i for i, text in enumerate(unique)}
        self.device = torch.device(model.device)
        feats = model.preprocess(unique) if unique else {}
        tensors = {k: v for k, v in feats.items() if isinstance(v, torch.Tensor) and v.ndim == 2}
        mask = tensors.get("attention_mask")
        self.lengths: list[int] = mask.sum(dim=1).tolist() if mask is not None else []
        self.tensors = {k: v.to(self.device) for k, v in tensors.items()}

    def rows(self, texts: Sequence[str]) -> list[int]:
        """The bank's row of each text (every text must be in the bank)."""
        return [self.row[t] for t in texts]

    def index(self, rows: Sequence[int] | torch.Tensor) -> torch.Tensor:
        """Row numbers as a tensor on the bank's device (copied without blocking on CUDA)."""
        t = torch.as_tensor(rows, dtype=torch.long)
        if self.device.type == "cuda":
            return t.pin_memory().to(self.device, non_blocking=True)
        return t.to(self.device)

    def features(self, rows: Sequence[int]) -> dict[str, torch.Tensor]:
        """The token tensors of ``rows``, in that order, padded to the longest of them."""
        width = max(self.lengths[r] for r in rows)
        index = self.index(rows)
        return {k: v.index_select(0, index)[:, :width] for k, v in self.tensors.items()}
