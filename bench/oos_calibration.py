"""Out of scope across domains (issue 46 item 4): which calibration, from the labelled pool alone,
keeps in-scope questions and rejects another assistant's.

Cells: (data set, seed, encoder). The pool is ``train_10shot_seed<N>.csv`` with the intents'
humanised names as anchors at the app's default weight, ranked by the app's rule (the
:class:`~core.retrieval.factory.PredictorFactory` every pool comes from). ``tuned`` is the
retrain's default recipe trained on the pool's own shots (a retrained project), ``frozen`` the
base. In scope: every test question of the data set; out of scope: CLINC150's ``test_oos.csv``
(1,000 questions) for both CLINC150 and BANKING77 (for BANKING77 another assistant's questions:
alarms, music, travel, small talk...). Nothing but the pool calibrates: no test, val or
out-of-scope row moves a threshold.

Metrics per candidate: ``flagged`` the share of in-scope test questions called out of scope,
``oos_recall`` the share of the out-of-scope questions called out of scope, ``oos_precision``
the share of called ones really out of scope with as many out-of-scope questions as in-scope ones
(``recall / (recall + flagged)``), ``acc`` in-scope accuracy (a flagged question is wrong),
``auroc`` of the candidate's score and ``best_flagged@95`` the share flagged by the test-chosen
threshold that catches 95 % of the out-of-scope questions (what no calibration can beat with
that score). Goal (issue 46): flagged <= 5 %, recall and precision >= 95 %.

Candidates (:data:`CANDIDATES`), each a score of a question and a threshold from the pool:

* ``current``: the app's :func:`core.evaluation.oos.calibrate_predictor` as it is at the
  commit run (since issue 46: ``oof all``, less the examples of one-example intents).
* ``right tops``: the app's rule before issue 46: 5-fold out-of-fold served scores of the
  examples whose top is their own intent, 95 % kept (the peer).
* ``oof all``: the same scores, every in-scope example counted (its top right or wrong).
* ``loo own`` / ``loo all``: leave-one-out scores (each example without itself).
* ``oof+anchors``: ``oof all`` plus each intent's anchor scored as a question by the examples.
* ``conformal``: split-conformal threshold on the leave-one-out scores (the
  ``floor(alpha (n + 1))``-th smallest, alpha = 5 %).
* ``kth-nn k``: the mean similarity to the ``k`` nearest pool examples of any intent,
  calibrated leave-one-out.
* ``maha``: minus the Mahalanobis distance to the nearest intent mean (shared covariance,
  Ledoit-Wolf shrinkage), calibrated out of fold; ``rel-maha`` minus the background distance.
* ``held-out 1/5`` / ``held-out 5`` (``tuned`` only, ``--held-out``): calibrating at the retrain
  on a held-out share. The pool's 5 folds (by intent, as ``oof all``'s); a fold's examples
  scored by the default recipe trained on the other folds, against a pool of the other folds,
  every example counted as ``oof all`` counts it; the threshold applies to the full retrain's
  scores. ``1/5``: fold 0 alone (one extra training); ``5``: every fold (five).
* ``held-out (product)``: the product's own implementation (issue 55) on the same five
  trainings: :func:`core.evaluation.held_out.held_out_correction` (its folds by pool id, the
  quantile map from the full retrain's out-of-fold scores onto the held-out ones) and
  :func:`core.evaluation.oos.calibrate_predictor` with that correction, as the retrain's
  ``calibrate`` phase and the live pools apply it. It should equal ``held-out 5``.

Usage:
    nice -n 10 python -m bench.oos_calibration --vectors /tmp/oos-vec --seeds 0,1,2 \\
        --encoders tuned,frozen --held-out 0,1,2,3,4 --threads 1 --json /tmp/oos_calibration.json
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench._common import offline_models
from bench.csvdata import read_csv

ROOT = Path(__file__).resolve().parents[1]

offline_models()

logger = logging.getLogger("bench.oos_calibration")

DATASETS = ("banking77", "clinc150")
TARGET = 0.95


def encode_cell(
    data: Path, ds: str, seed: int, encoder: str, vectors: Path | None, device: str
) -> dict[str, Any]:
    """Texts, labels and vectors of one cell (cached as float16 under ``vectors``)."""
    from core.retrieval.anchors import anchor_texts

    tr_x, tr_y = read_csv(data / ds / f"train_10shot_seed{seed}.csv")
    te_x, te_y = read_csv(data / ds / "test.csv")
    oos_x, _ = read_csv(data / "clinc150" / "test_oos.csv")
    names = sorted(set(tr_y))
    anchors = anchor_texts(names, {})
    cell: dict[str, Any] = {"train_y": tr_y, "test_y": te_y, "anchor_names": names}
    saved = vectors / ds / f"{encoder}-seed{seed}.npz" if vectors is not None else None
    if saved is not None and saved.is_file():
        with np.load(saved) as z:
            cell.update({k: z[k].astype(np.float32) for k in z.files})
        return cell
    from core.encoding.registry import load_encoder

    started = time.monotonic()
    if encoder == "frozen":
        enc: Any = load_encoder("minilm", device=device)
    elif encoder == "tuned":
        enc, seconds = _train(tr_x, tr_y, seed, device)
        cell.update(seconds)
        logger.info("%s seed %d trained in %.0f s", ds, seed, seconds["train_s"])
    else:
        raise SystemExit(f"unknown encoder {encoder!r}: use frozen or tuned")
    texts = {"train": tr_x, "test": te_x, "oos": oos_x, "anchors": [anchors[n] for n in names]}
    vecs: dict[str, np.ndarray] = {}
    if encoder == "frozen" and saved is not None:  # the base's test vectors are every seed's
        for other in sorted(saved.parent.glob("frozen-seed*.npz")):
            with np.load(other) as z:
                vecs = {k: z[k].astype(np.float32) for k in ("test", "oos")}
            break
    for k, v in texts.items():
        if k not in vecs:
            vecs[k] = np.asarray(enc.encode(v, batch_size=128), dtype=np.float32)
    logger.info("%s %s seed %d: vectors in %.0f s", ds, encoder, seed, time.monotonic() - started)
    if saved is not None:
        saved.parent.mkdir(parents=True, exist_ok=True)
        times = {k: np.float32(cell[k]) for k in ("train_s", "train_cpu_s") if k in cell}
        np.savez(saved, **{k: v.astype(np.float16) for k, v in vecs.items()}, **times)  # type: ignore[arg-type]
    cell.update(vecs)
    return cell


def _train(texts: list[str], labels: list[str], seed: int, device: str) -> tuple[Any, dict]:
    """The retrain's default recipe (``TrainConfig()``, as ``tuned``) on these examples: its
    encoder, and its wall and process CPU seconds (model load included, as a retrain's)."""
    from core.training import TrainConfig, train_encoder

    wall, cpu = time.monotonic(), time.process_time()
    trained = train_encoder(
        "minilm", texts, [(y,) for y in labels], TrainConfig(seed=seed), device=device
    )
    seconds = {"train_s": time.monotonic() - wall, "train_cpu_s": time.process_time() - cpu}
    return trained.encoder(), seconds


HELD_OUT_FOLDS = 5


def held_out_folds(y: list[str], folds: int = HELD_OUT_FOLDS) -> np.ndarray:
    """Each pool example's held-out fold, stratified by intent (``-1``: an intent with one
    example, which always stays in training: held out, it has no intent of its own to land on)."""
    from core.folds import fold_assignments

    count = {name: y.count(name) for name in set(y)}
    assign = np.full(len(y), -1)
    many = [i for i, name in enumerate(y) if count[name] >= 2]
    assign[many] = fold_assignments([y[i] for i in many], folds, seed=0)
    return assign


def held_out_cell(
    data: Path, ds: str, seed: int, fold: int, vectors: Path | None, device: str
) -> dict[str, Any]:
    """The pool's and anchors' vectors by the default recipe trained on the pool less held-out
    fold ``fold`` (of :data:`HELD_OUT_FOLDS`), and that training's seconds (cached as
    ``tuned-heldout<k>-fold<f>-seed<N>.npz`` under ``vectors``)."""
    from core.retrieval.anchors import anchor_texts

    name = f"tuned-heldout{HELD_OUT_FOLDS}-fold{fold}-seed{seed}.npz"
    saved = vectors / ds / name if vectors is not None else None
    if saved is not None and saved.is_file():
        with np.load(saved) as z:
            return {k: z[k].astype(np.float32) for k in z.files}
    tr_x, tr_y = read_csv(data / ds / f"train_10shot_seed{seed}.csv")
    rest = np.flatnonzero(held_out_folds(tr_y) != fold)
    enc, seconds = _train([tr_x[i] for i in rest], [tr_y[i] for i in rest], seed, device)
    logger.info("%s seed %d fold %d trained in %.0f s", ds, seed, fold, seconds["train_s"])
    names = sorted(set(tr_y))
    anchors = anchor_texts(names, {})
    out: dict[str, Any] = {
        "train": np.asarray(enc.encode(tr_x, batch_size=128), dtype=np.float32),
        "anchors": np.asarray(enc.encode([anchors[n] for n in names]), dtype=np.float32),
        **{k: np.float32(v) for k, v in seconds.items()},
    }
    if saved is not None:
        saved.parent.mkdir(parents=True, exist_ok=True)
        np.savez(saved, **out)
    return out


# ---------------------------------------------------------------- scores
def unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def served_predictor(cell: dict[str, Any], rows: np.ndarray | None = None) -> Any:
    """The app's Predictor over the pool (or its ``rows``), anchored by the intents' names."""
    from core.retrieval.anchors import DEFAULT_ANCHOR_WEIGHT, anchor_texts
    from core.retrieval.factory import Anchors, PredictorFactory

    names = cell["anchor_names"]
    anchors = Anchors(anchor_texts(names, {}), DEFAULT_ANCHOR_WEIGHT, cell["anchors"])
    factory = PredictorFactory.for_vectors(cell["train"].shape[1], anchors=anchors)
    keep = np.arange(len(cell["train_y"])) if rows is None else rows
    labels = [cell["train_y"][i] for i in keep]
    return factory.build([""] * len(keep), labels, vectors=cell["train"][keep], ids=list(keep))


def kth_similarity(pool: np.ndarray, queries: np.ndarray, k: int, self_in_pool: bool) -> np.ndarray:
    """The mean cosine of each query to its ``k`` nearest pool vectors of any intent (a pool
    vector scored as a query leaves itself out: ``self_in_pool``)."""
    sims = unit(queries) @ unit(pool).T
    if self_in_pool:
        np.fill_diagonal(sims, -np.inf)
    top = -np.partition(-sims, k - 1, axis=1)[:, :k]
    return np.asarray(top.mean(axis=1))


class Mahalanobis:
    """Minus the Mahalanobis distance to the nearest intent mean, one covariance shared by the
    intents (Ledoit-Wolf shrinkage); ``relative``: minus the distance to the pool's own mean
    under its own covariance (Ren et al. 2021)."""

    def __init__(self, x: np.ndarray, y: list[str], relative: bool = False) -> None:
        from sklearn.covariance import LedoitWolf

        x = unit(x).astype(np.float64)
        names = sorted(set(y))
        lab = np.array([names.index(v) for v in y])
        self.means = np.stack([x[lab == c].mean(axis=0) for c in range(len(names))])
        self.prec = LedoitWolf().fit(x - self.means[lab]).precision_
        self.relative = relative
        if relative:
            self.mean0 = x.mean(axis=0)
            self.prec0 = LedoitWolf().fit(x - self.mean0).precision_

    def score(self, q: np.ndarray) -> np.ndarray:
        q = unit(q).astype(np.float64)
        qp = q @ self.prec  # (q - m) P (q - m) = qPq - 2 qPm + mPm, one matrix product
        mp = self.means @ self.prec
        d = (
            np.einsum("ij,ij->i", qp, q)[:, None]
            - 2 * qp @ self.means.T
            + np.einsum("ij,ij->i", mp, self.means)[None, :]
        )
        if self.relative:
            c = q - self.mean0
            d = d - np.einsum("ij,ij->i", c @ self.prec0, c)[:, None]
        return np.asarray(-d.min(axis=1))


def folds_of(y: list[str], folds: int = 5) -> np.ndarray:
    from core.folds import fold_assignments

    return fold_assignments(list(y), folds, seed=0)


def conformal_threshold(scores: np.ndarray, alpha: float) -> float:
    """Split-conformal: accept a score at or above the ``floor(alpha (n + 1))``-th smallest
    calibration score (so a new in-scope question is kept with probability >= 1 - alpha when it
    is exchangeable with them)."""
    s = np.sort(np.asarray(scores))
    r = int(np.floor(alpha * (len(s) + 1)))
    return float(s[r - 1]) if r >= 1 else -np.inf


# A candidate: (cell, served predictor) -> (score of a question, threshold); flagged below it.
Candidate = Callable[[dict[str, Any], Any], tuple[Callable[[np.ndarray], np.ndarray], float]]


def _served_score(predictor: Any) -> Callable[[np.ndarray], np.ndarray]:
    return lambda q: np.asarray(predictor.tops(q).scores, dtype=np.float64)


def cand_current(cell: dict[str, Any], p: Any) -> tuple[Callable[[np.ndarray], np.ndarray], float]:
    from core.evaluation.oos import calibrate_predictor

    cal = calibrate_predictor(p, target_recall=TARGET)
    cell["_calibration"] = cal
    return _served_score(p), float(cal.thresholds["default"])


def cand_right_tops(
    cell: dict[str, Any], p: Any
) -> tuple[Callable[[np.ndarray], np.ndarray], float]:
    """The app's rule before issue 46: only the examples whose top is their own intent."""
    from core.evaluation.oos import choose_threshold

    scores = [s for name, top, s, _ in _oof(p) if top == name]
    return _served_score(p), choose_threshold(scores, (), TARGET)


def _oof(p: Any) -> list[tuple[str, str | None, float, float]]:
    from core.evaluation.oos import out_of_fold_scores

    return out_of_fold_scores(p)


def cand_oof_all(cell: dict[str, Any], p: Any) -> tuple[Callable[[np.ndarray], np.ndarray], float]:
    from core.evaluation.oos import choose_threshold

    scores = [s for _, top, s, _ in _oof(p) if top is not None]
    return _served_score(p), choose_threshold(scores, (), TARGET)


def _loo(cell: dict[str, Any], p: Any) -> tuple[np.ndarray, np.ndarray]:
    """Leave-one-out served scores of the pool and whether each landed on its own intent."""
    n = len(cell["train_y"])
    found = p.tops(cell["train"], exclude_ids=list(range(n)))
    own = np.array([t == y for t, y in zip(found.intents, cell["train_y"], strict=True)])
    return np.asarray(found.scores, dtype=np.float64), own


def cand_loo(own_only: bool) -> Candidate:
    def make(cell: dict[str, Any], p: Any) -> tuple[Callable[[np.ndarray], np.ndarray], float]:
        from core.evaluation.oos import choose_threshold

        scores, own = _loo(cell, p)
        kept = scores[own] if own_only else scores
        return _served_score(p), choose_threshold(kept.tolist(), (), TARGET)

    return make


def cand_oof_anchors(
    cell: dict[str, Any], p: Any
) -> tuple[Callable[[np.ndarray], np.ndarray], float]:
    from core.evaluation.oos import choose_threshold
    from core.retrieval.factory import vector_pool

    scores = [s for _, top, s, _ in _oof(p) if top is not None]
    plain = vector_pool(cell["train"], cell["train_y"])  # the examples, no anchors
    scores += [float(v) for v in plain.tops(cell["anchors"]).scores]
    return _served_score(p), choose_threshold(scores, (), TARGET)


def cand_conformal(
    cell: dict[str, Any], p: Any
) -> tuple[Callable[[np.ndarray], np.ndarray], float]:
    scores, _ = _loo(cell, p)
    return _served_score(p), conformal_threshold(scores, 1 - TARGET)


def cand_kth(k: int) -> Candidate:
    def make(cell: dict[str, Any], p: Any) -> tuple[Callable[[np.ndarray], np.ndarray], float]:
        pool = cell["train"]
        calib = kth_similarity(pool, pool, k, self_in_pool=True)
        return (
            lambda q: kth_similarity(pool, q, k, self_in_pool=False),
            conformal_threshold(calib, 1 - TARGET),
        )

    return make


def cand_maha(relative: bool) -> Candidate:
    def make(cell: dict[str, Any], p: Any) -> tuple[Callable[[np.ndarray], np.ndarray], float]:
        x, y = cell["train"], cell["train_y"]
        fold = folds_of(y)
        calib = np.empty(len(y))
        for f in np.unique(fold):
            rest = np.flatnonzero(fold != f)
            held = np.flatnonzero(fold == f)
            calib[held] = Mahalanobis(x[rest], [y[i] for i in rest], relative).score(x[held])
        model = Mahalanobis(x, y, relative)
        return model.score, conformal_threshold(calib, 1 - TARGET)

    return make


class Unavailable(Exception):
    """A candidate this cell has no scores for (the held-out ones off the tuned encoder, or a
    fold not trained yet)."""


def cand_held_out(folds: list[int]) -> Candidate:
    """Calibrating at the retrain on a held-out share: for each fold in ``folds``, the examples
    of that fold scored by the encoder trained without them (the default recipe on the other
    folds) against a pool of the other folds (the app's rule), every example counted as in
    ``oof all``; the threshold applies to the full retrain's scores."""

    def make(cell: dict[str, Any], p: Any) -> tuple[Callable[[np.ndarray], np.ndarray], float]:
        from core.evaluation.oos import choose_threshold

        held_out = cell.get("held_out", {})
        if any(f not in held_out for f in folds):
            raise Unavailable(f"held-out folds {sorted(set(folds) - set(held_out))} missing")
        assign = held_out_folds(cell["train_y"])
        scores: list[float] = []
        for f in folds:
            sub = {**cell, "train": held_out[f]["train"], "anchors": held_out[f]["anchors"]}
            pool = served_predictor(sub, rows=np.flatnonzero(assign != f))
            found = pool.tops(held_out[f]["train"][assign == f])
            scores += [
                float(s)
                for top, s, cold in zip(found.intents, found.scores, found.cold, strict=True)
                if top is not None and not cold
            ]
        return _served_score(p), choose_threshold(scores, (), TARGET)

    return make


def cand_product_held_out(
    cell: dict[str, Any], p: Any
) -> tuple[Callable[[np.ndarray], np.ndarray], float]:
    """The product's held-out calibration (see the module doc) on ``held-out 5``'s trainings:
    each fold's Predictor over the rest of the pool in the space of the encoder trained
    without the fold, the map fitted by the product's rule, the threshold by its calibration."""
    from core.evaluation.calibration import Correction
    from core.evaluation.held_out import held_out_correction, held_out_plan
    from core.evaluation.oos import calibrate_predictor

    held_out = cell.get("held_out", {})
    if set(held_out) != set(range(HELD_OUT_FOLDS)):
        raise Unavailable(f"held-out folds {sorted(set(range(HELD_OUT_FOLDS)) - set(held_out))}")
    everyone = list(range(len(cell["train_y"])))
    plan = held_out_plan(p, everyone, HELD_OUT_FOLDS)
    assign = held_out_folds(cell["train_y"])
    for fold in plan:  # the product deals the folds as the bench trained them
        assert set(fold.held) == set(np.flatnonzero(assign == fold.index).tolist()), fold.index

    def space(fold: Any) -> tuple[Any, np.ndarray]:
        vectors = held_out[fold.index]
        sub = {**cell, "train": vectors["train"], "anchors": vectors["anchors"]}
        return served_predictor(sub, rows=np.asarray(fold.rest)), vectors["train"][list(fold.held)]

    result = held_out_correction(p, everyone, plan, space)
    if result is None:
        raise Unavailable("too few held-out scores")
    correction = Correction(result.map, frozenset(everyone), "the bench's held-out calibration")
    cal = calibrate_predictor(p, target_recall=TARGET, correction=correction)
    return _served_score(p), float(cal.thresholds["default"])


def cand_per_intent(shrink: float) -> Candidate:
    """Each intent's own threshold from the out-of-fold scores whose top is that intent (kept
    95 %), shrunk toward the project-wide one by ``shrink`` pseudo-scores; an intent with fewer
    than 3 scores keeps the project-wide one (the app's mode before it was retired). The score is
    a question's top score less its top intent's threshold, flagged below 0."""

    def make(cell: dict[str, Any], p: Any) -> tuple[Callable[[np.ndarray], np.ndarray], float]:
        from collections import Counter

        from core.evaluation.oos import choose_threshold

        scored = _oof(p)
        count = Counter(name for name, _, _, _ in scored)
        own: dict[str, list[float]] = {}
        for name, top, value, _ in scored:
            if top is not None and count[name] >= 2:
                own.setdefault(top, []).append(value)
        default = choose_threshold([s for v in own.values() for s in v], (), TARGET)
        th = {
            name: alone + shrink * (default - alone) / (len(v) + shrink)
            for name, v in own.items()
            if len(v) >= 3
            for alone in [choose_threshold(v, (), TARGET)]
        }

        def margin(q: np.ndarray) -> np.ndarray:
            found = p.tops(q)
            return np.array(
                [
                    float(s) - th.get(t, default) if t is not None else -1.0
                    for t, s in zip(found.intents, found.scores, strict=True)
                ]
            )

        return margin, 0.0

    return make


CANDIDATES: dict[str, Candidate] = {
    "current": cand_current,
    "right tops": cand_right_tops,
    "oof all": cand_oof_all,
    "loo own": cand_loo(True),
    "loo all": cand_loo(False),
    "oof+anchors": cand_oof_anchors,
    "conformal": cand_conformal,
    "kth-nn 1": cand_kth(1),
    "kth-nn 5": cand_kth(5),
    "maha": cand_maha(False),
    "rel-maha": cand_maha(True),
    "held-out 1/5": cand_held_out([0]),
    "held-out 5": cand_held_out(list(range(HELD_OUT_FOLDS))),
    "held-out (product)": cand_product_held_out,
    "per-intent s=0": cand_per_intent(0.0),
    "per-intent s=20": cand_per_intent(20.0),
}


def measure(
    cell: dict[str, Any], score: Callable[[np.ndarray], np.ndarray], threshold: float
) -> dict[str, float]:
    """The goal's numbers of one candidate on one cell (see the module doc)."""
    from sklearn.metrics import roc_auc_score

    s_in, s_oos = score(cell["test"]), score(cell["oos"])
    flagged_in, flagged_oos = s_in < threshold, s_oos < threshold
    correct = np.asarray(cell["_tops"], dtype=object) == np.asarray(cell["test_y"], dtype=object)
    f, r = float(flagged_in.mean()), float(flagged_oos.mean())
    y = np.r_[np.zeros(len(s_in)), np.ones(len(s_oos))]
    best = float(np.quantile(s_oos, TARGET))  # flags 95 % of the out-of-scope questions
    return {
        "threshold": float(threshold),
        "flagged": f,
        "oos_recall": r,
        "oos_precision": r / (r + f) if r + f else 0.0,
        "acc": float((correct & ~flagged_in).mean()),
        "auroc": float(roc_auc_score(y, -np.r_[s_in, s_oos])),
        "best_flagged@95": float((s_in <= best).mean()),
    }


def run_cell(cell: dict[str, Any], names: list[str]) -> dict[str, dict[str, float]]:
    p = served_predictor(cell)
    cell["_tops"] = p.tops(cell["test"]).intents
    out = {}
    for name in names:
        started = time.monotonic()
        try:
            score, threshold = CANDIDATES[name](cell, p)
        except Unavailable as why:
            logger.info("%s: skipped (%s)", name, why)
            continue
        out[name] = measure(cell, score, threshold)
        logger.info("%s: %.1f s", name, time.monotonic() - started)
        if name == "current":  # the Label queue's hint as it is: a second rule
            cal = cell["_calibration"]
            hint: dict[str, np.ndarray] = {}
            for split in ("test", "oos"):
                found = p.tops(cell[split])
                hint[split] = np.array(
                    [
                        cal.looks_out_of_scope(bool(s < threshold), float(s), float(m))
                        for s, m in zip(found.scores, found.margins, strict=True)
                    ]
                )
            f, r = float(hint["test"].mean()), float(hint["oos"].mean())
            out["current: queue hint"] = {
                "flagged": f,
                "oos_recall": r,
                "oos_precision": r / (r + f) if r + f else 0.0,
            }
    return out


def training_seconds(cell: dict[str, Any]) -> dict[str, Any]:
    """The wall and CPU seconds of the full retrain and of each held-out fold's training (NaN
    where the vectors came from a cache that did not keep them)."""

    def of(v: dict[str, Any]) -> list[float]:
        return [float(v.get("train_s", np.nan)), float(v.get("train_cpu_s", np.nan))]

    return {"full": of(cell), "held_out": {f: of(v) for f, v in cell["held_out"].items()}}


def table(rows: list[dict[str, Any]]) -> str:
    """Median over seeds per (data set, encoder, candidate), with each seed's flagged share."""
    head = (
        f"{'data':<10} {'encoder':<7} {'candidate':<20} {'flagged % (seeds)':<20} {'flagged':>7} "
        f"{'recall':>7} {'prec':>7} {'acc':>6} {'auroc':>6} {'best@95':>8}"
    )
    lines = [head, "-" * len(head)]
    keys = dict.fromkeys((r["data"], r["encoder"], r["candidate"]) for r in rows)
    for ds, enc, cand in keys:
        mine = [r for r in rows if (r["data"], r["encoder"], r["candidate"]) == (ds, enc, cand)]

        def med(key: str, mine: list[dict[str, Any]] = mine) -> str:
            vals = [r[key] for r in mine if key in r]
            return f"{100 * statistics.median(vals):.1f}" if vals else "-"

        seeds = "/".join(f"{100 * r['flagged']:.1f}" for r in mine)
        lines.append(
            f"{ds:<10} {enc:<7} {cand:<20} {seeds:<20} {med('flagged'):>7} "
            f"{med('oos_recall'):>7} {med('oos_precision'):>7} {med('acc'):>6} "
            f"{med('auroc'):>6} {med('best_flagged@95'):>8}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--encoders", default="tuned,frozen")
    ap.add_argument("--vectors", type=Path, default=None, help="keep/reuse vectors here")
    ap.add_argument("--encode-only", action="store_true")
    ap.add_argument("--candidates", default=",".join(CANDIDATES))
    ap.add_argument("--device", default="cpu")
    ap.add_argument(
        "--held-out",
        default="",
        help=f"tuned only: the held-out folds (of {HELD_OUT_FOLDS}) to train, e.g. 0 or 0,1,2,3,4",
    )
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: its default)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    names = [c for c in args.candidates.split(",") if c]
    held_out = [int(f) for f in args.held_out.split(",") if f]
    rows: list[dict[str, Any]] = []
    timings: list[dict[str, Any]] = []
    for enc in args.encoders.split(","):
        for ds in args.datasets.split(","):
            for seed in (int(s) for s in args.seeds.split(",")):
                cell = encode_cell(args.data, ds, seed, enc, args.vectors, args.device)
                if enc == "tuned":
                    cell["held_out"] = {
                        f: held_out_cell(args.data, ds, seed, f, args.vectors, args.device)
                        for f in held_out
                    }
                    timings.append({"data": ds, "seed": seed, **training_seconds(cell)})
                if args.encode_only:
                    continue
                for cand, numbers in run_cell(cell, names).items():
                    row = {"data": ds, "encoder": enc, "seed": seed, "candidate": cand}
                    rows.append({**row, **numbers})
    for t in timings:
        print(json.dumps(t))
    if not rows:
        return 0
    print(table(rows))
    payload = {"target": TARGET, "rows": rows, "training_seconds": timings}
    if args.json:
        args.json.write_text(json.dumps(payload, indent=1), encoding="utf-8")
    print(json.dumps(payload))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
