"""Distillation from a teacher encoder: the relational loss compares similarities, not vectors,
so it is zero when the structures agree whatever the dimensions, and minimising it moves a
student's similarities to the teacher's; batches carry the teacher's vectors of what they
distil; the config refuses what cannot work."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core.training import TrainConfig, train_encoder
from core.training.distil import distil_batches
from core.training.loop import Batch
from core.training.losses import DistilLoss, similarity_distillation


def _teacher(n: int = 12, dim: int = 8, seed: int = 0) -> torch.Tensor:
    return torch.randn(n, dim, generator=torch.Generator().manual_seed(seed))


def _sims(x: torch.Tensor) -> torch.Tensor:
    x = torch.nn.functional.normalize(x, dim=-1)
    return x @ x.T


@pytest.mark.parametrize("kind", ["kl", "mse"])
def test_the_loss_is_zero_when_the_student_has_the_teachers_similarities_in_other_dimensions(
    kind,
):
    teacher = _teacher()
    # A rotation into 20 dimensions and a rescaling keep every cosine.
    q, _ = torch.linalg.qr(torch.randn(20, 20, generator=torch.Generator().manual_seed(1)))
    student = 3.0 * torch.cat([teacher, torch.zeros(12, 12)], dim=1) @ q
    assert abs(float(similarity_distillation(student, teacher, kind=kind))) < 1e-5
    other = _teacher(seed=2)
    assert float(similarity_distillation(other, teacher, kind=kind)) > 1e-3


def _nearest_agree(a: torch.Tensor, b: torch.Tensor) -> float:
    """Share of texts whose nearest other text is the same under both encoders."""
    sa, sb = _sims(a).fill_diagonal_(-2), _sims(b).fill_diagonal_(-2)
    return float((sa.argmax(1) == sb.argmax(1)).float().mean())


@pytest.mark.parametrize("kind", ["kl", "mse"])
def test_minimising_the_loss_moves_a_tiny_students_similarities_toward_the_teachers(kind):
    torch.manual_seed(0)
    inputs = torch.randn(16, 10)
    teacher = _teacher(n=16, dim=6, seed=3)
    student = torch.nn.Linear(10, 4)
    with torch.no_grad():
        start = float(similarity_distillation(student(inputs), teacher, kind=kind, temperature=0.1))
        agree = _nearest_agree(student(inputs), teacher)
    opt = torch.optim.Adam(student.parameters(), lr=0.05)
    for _ in range(200):
        loss = similarity_distillation(student(inputs), teacher, kind=kind, temperature=0.1)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        end = float(similarity_distillation(student(inputs), teacher, kind=kind, temperature=0.1))
        assert end < 0.25 * start
        assert _nearest_agree(student(inputs), teacher) >= agree + 0.25  # 2 of 16 -> 9 or more


def test_the_loss_needs_matching_rows_and_a_known_kind():
    with pytest.raises(ValueError, match=r"differ in rows \(3 vs 4\)"):
        similarity_distillation(torch.ones(3, 2), torch.ones(4, 5))
    with pytest.raises(ValueError, match="Unknown distillation loss 'l1'"):
        similarity_distillation(torch.ones(3, 2), torch.ones(3, 5), kind="l1")
    assert float(similarity_distillation(torch.ones(2, 2), torch.ones(2, 5))) == 0.0


class _Zero(torch.nn.Module):
    """A base loss that adds nothing, so only the distillation term is seen."""

    def compute_loss_from_embeddings(self, embeddings, labels):
        return embeddings[0].sum() * 0.0


def test_distil_loss_leaves_out_texts_the_teacher_has_no_vector_for():
    teacher = _teacher(n=5)
    anchors, unlabelled = teacher[:3].clone(), _teacher(n=2, seed=4)
    loss = DistilLoss(_Zero(), weight=2.0, kind="mse")
    positives = torch.zeros(3, 8)
    unknown = teacher.clone()
    unknown[3:] = float("nan")  # the two unlabelled ones: no teacher vector
    value = loss.compute_loss_from_embeddings([anchors, positives, unlabelled], None, unknown)
    assert abs(float(value)) < 1e-6  # only the anchors count, and they match
    known = loss.compute_loss_from_embeddings([anchors, positives, unlabelled], None, teacher)
    expected = 2.0 * similarity_distillation(torch.cat([anchors, unlabelled]), teacher, kind="mse")
    assert float(known) == pytest.approx(float(expected))


def test_each_batch_draws_other_unlabelled_utterances_with_the_teachers_vectors_in_order():
    texts = ["a", "b", "c", "d"]
    pool = [f"u{i}" for i in range(6)]
    vecs = {t: np.full(3, i, dtype=np.float32) for i, t in enumerate(texts + pool)}
    batches = [Batch([["a", "b"], ["b", "a"]]), Batch([["c", "d"], ["d", "c"]])]
    out = distil_batches(batches, [*pool[:4], "no vector"], vecs, 2, seed=0, device="cpu")
    assert [b.columns[:2] for b in out] == [b.columns for b in batches]
    drawn = out[0].columns[2] + out[1].columns[2]
    assert sorted(drawn) == pool[:4]  # all four, none twice, the one without a vector never
    for b in out:
        assert b.teacher is not None
        wanted = [vecs[t][0] for t in b.columns[0] + b.columns[2]]
        assert b.teacher[:, 0].tolist() == wanted
    again = distil_batches(batches, pool[:4], vecs, 2, seed=0, device="cpu")
    assert [b.columns[2] for b in again] == [b.columns[2] for b in out]
    with pytest.raises(ValueError, match="needs the teacher's vectors"):
        distil_batches(batches, pool, {}, 2, seed=0, device="cpu")


def test_distillation_needs_an_in_batch_method_a_known_loss_and_a_teacher():
    with pytest.raises(ValueError, match=r"distil_weight .* use method 'fast' or 'lora'"):
        TrainConfig(method="convfit", distil_weight=1.0)
    with pytest.raises(ValueError, match="Unknown distil_loss 'kd'"):
        TrainConfig(distil_loss="kd")
    with pytest.raises(ValueError, match=r"distil_temperature must be in \(0.0, 10.0\]"):
        TrainConfig(distil_temperature=0.0)
    with pytest.raises(ValueError, match="distil_weight must be in"):
        TrainConfig(distil_weight=-1.0)
    cfg = TrainConfig(distil_weight=0.5, distil_batch=16, distil_loss="mse")
    assert TrainConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="distil_weight needs the teacher's vectors"):
        train_encoder("minilm", ["a", "b", "c", "d"], [("x",), ("x",), ("y",), ("y",)], cfg)


@pytest.mark.slow
def test_distillation_reaches_training_and_changes_the_model(encoder):
    texts = ["I lost my card", "card is missing", "what is my balance", "how much money"]
    labels = [("lost",), ("lost",), ("balance",), ("balance",)]
    pool = ["where did my card go", "money left?", "hello", "send cash to mum"]
    # The frozen MiniLM stands in for the teacher, its vectors reversed so they disagree.
    teacher = dict(zip(texts + pool, encoder.encode(texts + pool)[::-1], strict=True))
    plain = TrainConfig(epochs=1, batch_size=2, seed=0)
    taught = TrainConfig(epochs=1, batch_size=2, seed=0, distil_weight=1.0, distil_batch=4)
    a = train_encoder("minilm", texts, labels, plain, device="cpu")
    b = train_encoder(
        "minilm", texts, labels, taught, device="cpu", teacher=teacher, unlabelled=pool
    )
    assert a.stats["steps"] == b.stats["steps"]
    assert a.stats["loss"] != b.stats["loss"]
    assert not np.allclose(a.encoder().encode(pool), b.encoder().encode(pool), atol=1e-5)
