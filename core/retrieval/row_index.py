"""Every row of a project in one vector space, searchable at any size (issue 72 item 1): the
labelling queue's "near an intent", the neighbours of what was just labelled, and the vectors of
the rows an order refreshes, over up to the app's row cap (250,000).

A :class:`RowIndex` holds unit vectors by row id in faiss: an exact flat inner-product index
below :data:`SWITCH_AT` rows, an inverted-file index (IVF, flat lists, :data:`NPROBE` lists
searched) from there on, its centroids trained again once it holds :data:`RETRAIN_GROWTH` times
the rows they were trained on. ``bench/row_index.py`` chose the switch: the size where an exact
search of a chunk of queries starts to cost more than the IVF's at a recall of about 0.95 (an
HNSW graph searches faster still but cannot remove a row, which an edited or deleted text needs).
Rows are added, replaced and removed by id without a rebuild; :meth:`RowIndex.save` and
:meth:`RowIndex.load` keep it on disk (one ``.npz``, written under a temporary name and renamed),
so a restart reads it instead of building it again.

Not thread-safe: its owner (:class:`app.serving.row_spaces.RowSpace`) holds a lock around it.

Example:
    >>> index = RowIndex(2)
    >>> index.add(np.array([10, 11]), np.array([[1, 0], [0, 1]], dtype=np.float32))
    >>> sims, ids = index.search(np.array([[0.9, 0.1]], dtype=np.float32), 1)
    >>> ids.tolist(), index.kind
    ([[10]], 'flat')
    >>> index.search(np.array([[0.9, 0.1]], dtype=np.float32), 1, exclude=[10])[1].tolist()
    [[11]]
"""

from __future__ import annotations

import math
import os
import uuid
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, cast

import faiss
import numpy as np

from core.portable import normalise

# Rows from which the index is an IVF rather than an exact flat search (bench/row_index.py).
SWITCH_AT = 40_000
# Inverted lists searched per query (of about sqrt(rows)): recall ~0.95 on sentence vectors.
NPROBE = 16
# An IVF trains its centroids again once it holds this many times the rows it was trained on.
RETRAIN_GROWTH = 4
# Training points per centroid (faiss warns below 39).
POINTS_PER_LIST = 40
FORMAT = 1


def _lists(n: int) -> int:
    """The IVF's number of inverted lists for ``n`` rows: about sqrt(n), at least 16."""
    return max(16, int(math.sqrt(max(n, 1))))


class RowIndex:
    """Unit vectors by row id (int64), flat or IVF by size (see the module)."""

    def __init__(self, dim: int, *, switch_at: int = SWITCH_AT, nprobe: int = NPROBE) -> None:
        self.dim = dim
        self.switch_at = switch_at
        self.nprobe = nprobe
        # faiss's stubs know little of the IVF's direct map and search parameters: Any
        self._index: Any = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
        self._ids: set[int] = set()
        self.trained_on = 0  # rows the IVF's centroids were trained on (0: flat)

    @property
    def kind(self) -> str:
        return "ivf" if self.trained_on else "flat"

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, row_id: object) -> bool:
        return row_id in self._ids

    def ids(self) -> np.ndarray:
        """Every row id held (int64, sorted)."""
        return np.array(sorted(self._ids), dtype=np.int64)

    def add(self, ids: Sequence[int] | np.ndarray, vectors: np.ndarray) -> None:
        """Add rows (a row already held is replaced); switches to (or retrains) the IVF when
        the size calls for it."""
        ids = np.asarray(ids, dtype=np.int64)
        if not len(ids):
            return
        vectors = normalise(np.asarray(vectors, dtype=np.float32))
        if vectors.shape != (len(ids), self.dim):
            raise ValueError(
                f"vectors of shape {vectors.shape} for {len(ids)} ids of width {self.dim}"
            )
        if len(set(ids.tolist())) != len(ids):
            raise ValueError("the same id twice in one add")
        held = [i for i in ids.tolist() if i in self._ids]
        if held:
            self.remove(held)
        self._index.add_with_ids(vectors, ids)
        self._ids.update(ids.tolist())
        n = len(self._ids)
        if (not self.trained_on and n >= self.switch_at) or (
            self.trained_on and n >= RETRAIN_GROWTH * self.trained_on
        ):
            self._rebuild()

    def remove(self, ids: Iterable[int]) -> int:
        """Remove rows by id (ids not held are ignored); how many were removed."""
        gone = [i for i in ids if i in self._ids]
        if not gone:
            return 0
        self._index.remove_ids(np.asarray(gone, dtype=np.int64))
        self._ids.difference_update(gone)
        return len(gone)

    def vectors(self, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """The unit vectors of rows held (in the order of ``ids``)."""
        ids = np.asarray(ids, dtype=np.int64)
        if not len(ids):
            return np.zeros((0, self.dim), dtype=np.float32)
        missing = [i for i in ids.tolist() if i not in self._ids]
        if missing:
            raise KeyError(f"rows not in the index: {missing[:5]}")
        if self.trained_on:
            return np.stack([self._index.reconstruct(int(i)) for i in ids]).astype(np.float32)
        return np.asarray(self._index.reconstruct_batch(ids), dtype=np.float32)

    def search(
        self, queries: np.ndarray, k: int, *, exclude: Iterable[int] = ()
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` rows nearest each query (inner product of unit vectors: cosine), leaving
        ``exclude`` out: ``(similarities, ids)``, each ``(len(queries), k)``, ids -1 past the
        rows found."""
        queries = normalise(np.atleast_2d(np.asarray(queries, dtype=np.float32)))
        k = max(1, min(k, len(self._ids) or 1))
        left_out = np.fromiter((int(i) for i in exclude), dtype=np.int64)
        sel = faiss.IDSelectorNot(faiss.IDSelectorBatch(left_out)) if len(left_out) else None
        params: Any = faiss.SearchParametersIVF() if self.trained_on else faiss.SearchParameters()
        if self.trained_on:
            params.nprobe = self.nprobe
        if sel is not None:
            params.sel = sel
        sims, found = self._index.search(queries, k, params=params)
        return sims, found

    def _all(self) -> tuple[np.ndarray, np.ndarray]:
        ids = self.ids()
        return ids, self.vectors(ids)

    def _rebuild(self) -> None:
        """Train an IVF on the rows held (a sample of them) and move every row into it."""
        ids, vectors = self._all()
        nlist = _lists(len(ids))
        quantizer = faiss.IndexFlatIP(self.dim)
        ivf: Any = faiss.IndexIVFFlat(quantizer, self.dim, nlist, faiss.METRIC_INNER_PRODUCT)
        sample = vectors
        if len(vectors) > POINTS_PER_LIST * nlist:
            pick = np.random.default_rng(0).choice(len(vectors), POINTS_PER_LIST * nlist, False)
            sample = vectors[np.sort(pick)]
        ivf.train(sample)
        ivf.set_direct_map_type(cast(Any, faiss).DirectMap.Hashtable)
        ivf.add_with_ids(vectors, ids)
        self._keep_quantizer = quantizer  # faiss's index refers to it: kept alive with it
        self._index = ivf
        self.trained_on = len(ids)

    # --- on disk -------------------------------------------------------------------------

    def save(self, path: Path, extra: dict[str, np.ndarray] | None = None) -> None:
        """Write the index (and ``extra`` arrays beside it) to ``path`` atomically."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
        data = faiss.serialize_index(self._index)
        meta = np.array([FORMAT, self.dim, self.trained_on, self.switch_at, self.nprobe])
        try:
            with tmp.open("wb") as fh:
                arrays: dict[str, Any] = {"index": data, "meta": meta, **(extra or {})}
                np.savez(fh, **arrays)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)

    @classmethod
    def load(cls, path: Path) -> tuple[RowIndex, dict[str, np.ndarray]]:
        """An index :meth:`save` wrote, and its ``extra`` arrays.

        Raises:
            ValueError: the file is not one (torn, foreign, another format).
            OSError: it cannot be read.
        """
        try:
            with np.load(path, allow_pickle=False) as z:
                arrays = {name: z[name] for name in z.files}
        except (KeyError, EOFError, ValueError, zipfile.BadZipFile) as exc:
            raise ValueError(f"not a row index: {exc}") from exc
        meta = arrays.pop("meta", None)
        data = arrays.pop("index", None)
        if meta is None or data is None or len(meta) != 5 or int(meta[0]) != FORMAT:
            raise ValueError("not a row index of this format")
        made = cls(int(meta[1]), switch_at=int(meta[3]), nprobe=int(meta[4]))
        try:
            made._index = faiss.deserialize_index(data)
        except RuntimeError as exc:
            raise ValueError(f"not a faiss index: {exc}") from exc
        made.trained_on = int(meta[2])
        if made.trained_on:
            ivf: Any = faiss.extract_index_ivf(made._index)
            made._keep_quantizer = ivf.quantizer
            made._ids = {int(i) for i in _ivf_ids(ivf)}
        else:
            made._ids = set(faiss.vector_to_array(made._index.id_map).tolist())
        if made._index.d != made.dim or made._index.ntotal != len(made._ids):
            raise ValueError("a row index whose ids do not match its vectors")
        return made, arrays


def _ivf_ids(ivf: Any) -> np.ndarray:
    """Every id an IVF's inverted lists hold."""
    invlists = ivf.invlists
    parts = []
    for list_no in range(ivf.nlist):
        size = invlists.list_size(list_no)
        if size:
            ptr = invlists.get_ids(list_no)
            parts.append(faiss.rev_swig_ptr(ptr, size).copy())
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
