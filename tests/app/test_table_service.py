"""The Data tab's table: pages, predictions beside the labels (leave-one-out for pool rows), and
filters and sorts on what the model says."""

from __future__ import annotations

from app.services.labelling import data as data_svc
from app.services.labelling.table import TableQuery, table_page


def test_pages_cover_every_row_once_in_file_order(serving_state, demo):
    everything = [r["id"] for r in data_svc.table(serving_state.db, demo)]
    first = table_page(serving_state.live, demo, TableQuery(page_size=50))
    assert first.total == len(everything) and first.pages == -(-len(everything) // 50)
    seen = []
    for n in range(1, first.pages + 1):
        seen += [
            r["id"]
            for r in table_page(serving_state.live, demo, TableQuery(page=n, page_size=50)).rows
        ]
    assert seen == everything
    beyond = table_page(serving_state.live, demo, TableQuery(page=99, page_size=50))
    assert beyond.page == first.pages  # a page past the end shows the last one


def test_a_training_example_is_predicted_without_itself(serving_state, demo):
    rows = table_page(serving_state.live, demo, TableQuery(split="train", page_size=500)).rows
    # with itself in the pool every score would be 1.0 and every prediction its own label
    assert any(r["score"] < 0.99 for r in rows)
    wrong = table_page(
        serving_state.live, demo, TableQuery(split="train", disagree=True, page_size=500)
    ).rows
    assert wrong and all(r["predicted"] not in r["intents"] for r in wrong)
    assert len(wrong) < len(rows)


def test_prediction_filters_and_sort(serving_state, demo):
    low = table_page(
        serving_state.live, demo, TableQuery(below=0.5, sort="score_low", page_size=500)
    ).rows
    assert low and all(r["score"] < 0.5 for r in low)
    assert [r["score"] for r in low] == sorted(r["score"] for r in low)
    refunds = table_page(
        serving_state.live, demo, TableQuery(predicted="refund_status", page_size=500)
    ).rows
    assert refunds and {r["predicted"] for r in refunds} == {"refund_status"}
    page = table_page(
        serving_state.live, demo, TableQuery(predicted="refund_status", split="unlabelled")
    )
    assert all(r["split"] == "unlabelled" for r in page.rows)
    assert page.caption().startswith(f"Rows 1–{len(page.rows)} of {page.total}")


def test_each_rows_prediction_is_the_first_place_of_the_live_ranking(serving_state, demo):
    """The table shows a row's top intent and score without the ranking's evidence: they are
    what the live Predictor's ranking puts first, leave-one-out for a pool row (the demo
    project's rows carry no context: their text is what is encoded)."""
    rows = table_page(serving_state.live, demo, TableQuery(page_size=500)).rows
    pool = serving_state.live.pool(demo.id)
    vectors = serving_state.live.cache.encode(pool.encoder, [r["text"] for r in rows])
    ranked = pool.predictor.rank(vectors, exclude_ids=[r["id"] for r in rows], show=0)
    assert len(rows) > 100
    assert [(r["predicted"], r["score"]) for r in rows] == [
        (p.top or "", None if p.top is None else round(p.score, 2)) for p in ranked
    ]
