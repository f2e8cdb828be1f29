from __future__ import annotations

import re

import numpy as np

from app.plots import MapData
from app.report import (
    ReportData,
    evidence_card,
    render_report,
    summary_sentences,
    write_report,
)
from app.services.projects.io import destination
from core.retrieval.explain import explain
from core.retrieval.knn import IntentScore, Neighbour, Prediction
from tests.handles import live

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
        n_evaluated=23,
        n_examples=1423,
        per_intent_f1={"card_arrival": 0.95, "top_up_failed": 0.8, XSS: 0.5},
        baseline_per_intent_f1={"card_arrival": 0.7, "top_up_failed": 0.8, XSS: 0.6},
        misses={XSS: (f"my {XSS} text", "top_up_failed")},
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
    # plotly.js (the basic bundle) inline exactly once, before the first of two figures
    assert html.count("plotly.js (basic - minified)") == 1
    assert html.count("Plotly.newPlot(") == 2
    assert html.index("plotly.js (basic") < html.index("Plotly.newPlot(")
    for section in ("9f8e7d6c", "v3", "Details", "Per-intent F1", "Most confused intents"):
        assert section in html
    assert "<em>card_arrival</em>" in html  # the sentence's *intent* emphasis
    assert "<em>stakeholders</em>" in html
    out = write_report(_data(), tmp_path / "r" / "report.html")
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_details_table_shows_each_measure_once_rounded_for_people() -> None:
    html = render_report(_data())
    table = html[html.index("<h2>Details</h2>") :]
    table = table[: table.index("</table>")]
    for name in ("Accuracy", "Macro-F1", "Silhouette", "Alignment", "Uniformity"):
        assert table.count(f"<td>{name}</td>") == 1
    assert "91 %" in table and "+11.0 pts" in table  # accuracy 0.80 -> 0.91
    assert "+0.63" in table and "0.070" not in table  # silhouette 0.07 -> 0.70, 2 decimals
    assert "share of questions whose top intent is the right one" in table
    assert "1,423 labelled examples" in html and "1423.000" not in html


def test_the_report_leads_with_the_summary_then_the_cards_then_the_details() -> None:
    html = render_report(_data())
    summary = html.index("class='summary'")
    assert summary < html.index("class='cards'") < html.index("<h2>Details</h2>")
    assert "91 % of the 23 test questions go to the right intent, up 11.0 points" in html
    # the lead paragraph holds what the model knows and how often it is right; lists follow
    lead = html[html.index("<p class='lead'>") :]
    lead = lead[: lead.index("</p>")]
    assert "learnt from 1,423 labelled examples. 91 % of the 23 test questions" in lead
    assert "still fail" not in lead


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


def _summary(**changes: object) -> str:
    return " ".join(summary_sentences(ReportData(**{**_data().__dict__, **changes})))


def test_summary_names_what_improved_and_what_still_fails_with_an_example() -> None:
    text = _summary()
    assert "The intent that improved most: *card_arrival* (F1 70 % → 95 %)." in text
    # worst first, the failed example quoted with what it went to
    assert f"The 3 that still fail most: *{XSS}* (F1 50 %; e.g. “my {XSS} text” went to" in text
    assert "went to *top_up_failed*); *top_up_failed* (F1 80 %); *card_arrival* (F1 95 %)." in text


def test_summary_says_down_when_the_model_got_worse() -> None:
    text = _summary(metrics={"accuracy": 0.75}, per_intent_f1={"a": 0.5}, misses={})
    assert "75 % of the 23 test questions go to the right intent, down 5.0 points" in text
    assert "No intent improved with training." in text
    assert "The intent that still fails most: *a* (F1 50 %)." in text


def test_summary_of_a_cross_validated_multi_label_project() -> None:
    text = _summary(
        primary="micro_f1",
        evaluated_on="cv5",
        metrics={"micro_f1": 0.783},
        baseline_metrics={"micro_f1": 0.783},
        per_intent_f1={"a": 1.0, "b": 1.0},
    )
    assert "micro-F1 of 78.3 % on the 23 labelled examples, each predicted from the others" in text
    assert "no test questions yet" in text and "the same as the base model" in text
    assert "Every intent is recognised without a miss." in text


def test_summary_of_the_frozen_encoder_itself_compares_with_nothing() -> None:
    text = _summary(is_baseline=True, model_version="frozen base")
    assert "No retrained model is active yet: these are the base model's scores." in text
    assert "improved" not in text and "points" not in text


def test_static_report_has_no_script_and_draws_f1_as_bars() -> None:
    html = render_report(_data(), static=True)
    assert "<script" not in html.lower() and "plotly" not in html.lower()
    assert XSS not in html and XSS_ESCAPED in html
    assert html.count("class='bar'") == 3 and "was 70 %" in html
    assert "How the model arranges" not in html


def test_banking77_sized_report_stays_under_2_mb() -> None:
    rng = np.random.default_rng(0)
    intents = [f"intent_{i:02d}_{'x' * 12}" for i in range(77)]
    n = 1420
    gold: list[str | None] = [intents[i % 77] for i in range(n)]
    texts = [f"how do I do thing number {i} with my card, please tell me" for i in range(n)]
    pts = rng.normal(size=(n, 2))
    m = MapData(pts, list(range(n)), texts, gold, gold, ["train"] * n, [0.1] * n)
    matrix = rng.integers(0, 3, size=(77, 77))
    data = ReportData(
        project="banking77",
        model_version="v1",
        dataset_hash="h",
        metrics={"accuracy": 0.86},
        baseline_metrics={"accuracy": 0.84},
        per_intent_f1={k: float(rng.random()) for k in intents},
        confusion_labels=intents,
        confusion_matrix=matrix,
        map_before=m,
        map_after=m,
        evidence=[_data().evidence[0]] * 6,
    )
    html = render_report(data)
    assert len(html.encode("utf-8")) < 2_000_000
    assert html.count("Plotly.newPlot(") == 2


def test_service_reports_a_project_without_test_split_by_cross_validation(serving_state) -> None:
    from app.services.projects.io import import_utterances
    from app.services.projects.reports import build_report
    from storage.utterances import NewUtterance

    texts = {
        "track": [
            "where is my order",
            "has my parcel shipped",
            "when will it arrive",
            "track my package",
            "is my delivery late",
            "order status please",
        ],
        "refund": [
            "refund please",
            "I want my money back",
            "return this item",
            "how do I get a refund",
            "give my money back",
            "cancel and refund",
        ],
    }
    rows = [NewUtterance(t, (k,), "train") for k, ts in texts.items() for t in ts]
    import_utterances(serving_state.db, destination(serving_state.db, "shop"), rows)
    path = build_report(serving_state, live(serving_state, "shop"), static=True)
    assert path.parent.parent == serving_state.settings.data_dir / "downloads"
    html = path.read_text(encoding="utf-8")
    assert "of the 12 labelled examples, each predicted from the others" in html
    assert "The model knows 2 intents, learnt from 12 labelled examples." in html
    assert "<script" not in html and html.count("class='card'") >= 2


def test_summary_says_how_many_test_questions_would_go_to_the_fallback() -> None:
    assert "fallback" not in _summary()  # detection off: nothing said
    text = _summary(oos_target=0.95, fallback=2)
    assert "keeps 95% of each intent's own questions), 2 of the 23 test questions (8.7%)" in text


def test_service_counts_the_fallback_with_the_live_decision(serving_state, demo, tmp_path) -> None:
    from app.services.labelling import data as data_svc
    from app.services.projects.reports import _fallback
    from storage.projects import get_project
    from storage.utterances import list_utterances

    data_svc.add_utterance(
        serving_state.db, demo, "what's the weather in Paris tomorrow", ["track_order"], "test"
    )
    with serving_state.db.session() as s:
        p = get_project(s, str(demo))
        rows, pid = list_utterances(s, p.id), p.id
    target, n = _fallback(serving_state.live, demo, pid, rows, cross_validated=False)
    assert target == 0.95 and n >= 1  # the weather question at least falls back
    n_tests = sum(1 for r in rows if r.split == "test" and r.labels)
    assert n < n_tests / 2


def test_a_report_of_an_unchanged_project_is_the_same_report_built_once_at_a_time(
    serving_state, demo, monkeypatch
) -> None:
    """Issue 45 row 13: one report of a project is built at a time (a second request waits and
    gets the first one's), an unchanged project's report is not built again (either kind, asked
    for in turn), and a changed dataset or active version builds it again. The real build runs;
    a wrapper only counts the builds and how many run at once."""
    import threading

    from app.services.labelling import data as data_svc
    from app.services.projects import reports

    real_build = reports._build
    running: list[int] = []
    built: list[int] = []
    peak: list[int] = []

    def counted(*args, **kwargs):
        running.append(1)
        peak.append(len(running))
        try:
            return real_build(*args, **kwargs)
        finally:
            running.pop()
            built.append(1)

    monkeypatch.setattr(reports, "_build", counted)
    paths: list = []
    clicks = [
        threading.Thread(
            target=lambda: paths.append(reports.build_report(serving_state, demo, static=True))
        )
        for _ in range(3)
    ]
    for t in clicks:
        t.start()
    for t in clicks:
        t.join(120)
    assert max(peak) == 1  # never two of a project at once
    assert len(built) == 1 and len(paths) == 3 and len(set(paths)) == 1  # all three got it
    assert paths[0].read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    copy = reports.build_report(
        serving_state, demo, serving_state.settings.data_dir / "mine.html", static=True
    )
    assert copy.read_bytes() == paths[0].read_bytes() and len(built) == 1
    interactive = reports.build_report(serving_state, demo, static=False)  # another kind of report
    assert len(built) == 2
    # the two kinds asked for in turn: each is the one already made, none is built again
    assert reports.build_report(serving_state, demo, static=True) == paths[0]
    assert (
        reports.build_report(serving_state, demo, static=False) == interactive and len(built) == 2
    )
    data_svc.add_utterance(serving_state.db, demo, "is my parcel lost", ["track_order"], "train")
    reports.build_report(serving_state, demo, static=True)  # the data changed: built again
    assert len(built) == 3


def test_asterisks_in_quoted_utterances_stay_asterisks() -> None:
    """Issue 56, row 12: the report turned ``*…*`` inside quoted utterances into italics
    (``{{7*7}}`` showed as ``{{77}}``, the middle 7 in italics). Only the names the sentences
    mark are emphasised; a quoted text, and a name with a ``*`` of its own, show as typed."""
    template = "price {{7*7}} *now*"
    n1 = Neighbour(7, template, ("pri*ce",), 0.83)
    n2 = Neighbour(8, "How long does delivery take?", ("card_delivery_estimate",), 0.71)
    pred = Prediction(
        [IntentScore("pri*ce", 0.83, n1), IntentScore("card_delivery_estimate", 0.71, n2)],
        [n1, n2],
    )
    ex = explain("what is {{7*7}}", pred)
    data = ReportData(**{**_data().__dict__, "evidence": [ex.to_dict()]})
    data.misses = {"card_arrival": (template, "pri*ce")}
    page = render_report(data)
    assert "{{7*7}} *now*" in page and "<em>now</em>" not in page and "{{77}}" not in page
    assert "<em>pri*ce</em>" in page
    assert "{{7*7}}" in evidence_card(ex.to_dict()).replace("{{7*7}} *now*", "{{7*7}}")
