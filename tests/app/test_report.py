from __future__ import annotations

import re

import numpy as np

from app.plots import MapData
from app.report import ReportData, evidence_card, render_report, write_report
from core.retrieval.explain import explain
from core.retrieval.knn import IntentScore, Neighbour, Prediction

XSS = "<script>alert(1)</script>"
XSS_ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


def _data() -> ReportData:
    ids = [1, 2, 3, 4]
    texts = [XSS, "where is my card", "top up failed", "rate?"]
    gold: list[str | None] = ["card_arrival", "card_arrival", "top_up_failed", None]
    pred = ["card_arrival", "top_up_failed", "top_up_failed", "card_arrival"]
    splits = ["train", "test", "test", "unlabelled"]
    pts = np.array([[0, 0], [1, 0], [0, 1], [1, 1]], dtype=np.float32)
    a = MapData(pts, ids, texts, gold, pred, splits, [0.2, 0.01, 0.3, 0.1])
    b = MapData(pts * 2, ids, texts, gold, pred, splits, [0.2, 0.01, 0.3, 0.1])
    n1 = Neighbour(7, XSS, ("card_arrival",), 0.83)
    n2 = Neighbour(8, "How long does delivery take?", ("card_delivery_estimate",), 0.71)
    pred_obj = Prediction(
        [IntentScore("card_arrival", 0.83, n1), IntentScore("card_delivery_estimate", 0.71, n2)],
        [n1, n2],
    )
    ex = explain(XSS, pred_obj, gold="card_arrival")
    return ReportData(
        project=f"demo {XSS}",
        model_version="v3",
        dataset_hash="9f8e7d6c",
        metrics={"accuracy": 0.91, "macro_f1": 0.9},
        baseline_metrics={"accuracy": 0.8, "macro_f1": 0.78},
        per_intent_f1={"card_arrival": 0.95, "top_up_failed": 0.8, XSS: 0.5},
        confusion_labels=["card_arrival", "top_up_failed", XSS],
        confusion_matrix=[[9, 1, 0], [2, 8, 0], [0, 3, 1]],
        map_before=a,
        map_after=b,
        space_before={"silhouette": 0.07, "alignment": 1.1, "uniformity": -2.0},
        space_after={"silhouette": 0.7, "alignment": 0.4, "uniformity": -3.0},
        evidence=[ex.to_dict()],
        generated_at="2025-01-01 00:00 UTC",
        notes=f"Prepared for *stakeholders* {XSS}",
    )


def test_report_is_self_contained_and_escaped(tmp_path) -> None:
    html = render_report(_data())
    assert XSS not in html
    assert XSS_ESCAPED in html
    assert "<script src" not in html.lower()
    assert not re.search(r"<link[^>]+href=[\"']?https?:", html, flags=re.I)
    assert not re.search(r"@import\s+url\(\s*[\"']?https?:", html, flags=re.I)
    # plotly.js inline exactly once, four figures drawn
    assert html.count("plotly.js v") == 1
    assert html.count("Plotly.newPlot(") == 3
    for section in ("9f8e7d6c", "v3", "Headline metrics", "Per-intent F1", "Confusions"):
        assert section in html
    assert "<em>card_arrival</em>" in html  # the sentence's *intent* emphasis
    assert "<em>stakeholders</em>" in html
    out = write_report(_data(), tmp_path / "r" / "report.html")
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_headline_table_shows_change() -> None:
    html = render_report(_data())
    assert "+0.110" in html  # accuracy 0.80 -> 0.91
    assert "+0.630" in html  # silhouette 0.07 -> 0.70


def test_empty_report_renders_without_figures() -> None:
    html = render_report(ReportData(project="p", model_version="v1", dataset_hash="h"))
    assert "<script" not in html
    assert "No metrics recorded" in html


def test_evidence_card_escapes_everything() -> None:
    card = evidence_card(
        {
            "text": XSS,
            "sentence": f"Predicted *{XSS}* because",
            "runner_up": XSS,
            "runner_up_neighbour": {"text": XSS, "labels": [XSS], "similarity": 0.5},
            "neighbours": [{"text": XSS, "labels": [XSS], "similarity": 0.5}],
            "correct": False,
            "gold": [XSS],
            "borderline": True,
            "borderline_reason": XSS,
        }
    )
    assert XSS not in card and XSS_ESCAPED in card
    assert "borderline" in card and "wrong" in card
