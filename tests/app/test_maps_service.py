from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from app.services.design import maps as svc
from app.services.design.map_warm_up import draws_large_maps
from app.services.labelling import bulk as bulk_svc
from app.services.models.versions import BASE
from app.services.projects.io import destination


def test_map_is_cached_and_survives_relabelling(serving_state, demo):
    first = svc.compute_map(serving_state.maps, demo, method="pca")
    assert first.points.shape == (len(first.ids), 2)
    assert first.metrics["n_intents"] > 0.0 and -1.0 <= first.metrics["silhouette"] <= 1.0
    files = list(serving_state.maps.root.glob("*.npz"))
    assert len(files) == 1
    assert (
        svc.get_map(serving_state.maps, demo, method="pca") is first
    )  # nothing changed: drawn as it was
    # labels are not part of the key: relabelling recolours without re-projecting
    unlabelled = [i for i, s in zip(first.ids, first.splits, strict=True) if s == "unlabelled"]
    assert bulk_svc.label_many(
        serving_state.db, demo, unlabelled[:2], ["talk_to_human"]
    ).change == tuple(unlabelled[:2])
    again = svc.get_map(serving_state.maps, demo, method="pca")
    assert again is not first  # a label changed: the colours follow it
    assert again is not None
    assert (again.points == first.points).all()
    moved = [again.gold[again.ids.index(i)] for i in unlabelled[:2]]
    assert moved == [("talk_to_human",), ("talk_to_human",)]
    assert list(serving_state.maps.root.glob("*.npz")) == files
    fig = svc.map_figure(again, highlight="misclassified")
    assert fig.layout.meta["n_points"] == len(first.ids)


def test_the_map_answers_with_a_pca_picture_before_umap_is_done(serving_state, demo, monkeypatch):
    """A first render is a picture at once: the quick PCA map, marked provisional, while the
    UMAP projection is computed in the background; the next call after it landed returns it."""
    release = threading.Event()

    def slow(vectors, method):
        assert method == "umap"  # PCA is computed here, not by the projecting process
        release.wait(60)
        return np.full((len(vectors), 2), 7.0, dtype=np.float32)

    monkeypatch.setattr(serving_state.maps.projector, "project", slow)
    first = svc.get_map(serving_state.maps, demo, method="umap")
    assert first.provisional and first.method == "pca"
    assert first.points.shape == (len(first.ids), 2)
    again = svc.get_map(
        serving_state.maps, demo, method="umap"
    )  # still computing: the picture again
    assert again.provisional
    release.set()
    deadline = time.time() + 60
    view = again
    while view.provisional and time.time() < deadline:
        time.sleep(0.05)
        view = svc.get_map(serving_state.maps, demo, method="umap")
    assert not view.provisional and view.method == "umap"
    assert (view.points == 7.0).all()


def test_a_first_picture_encodes_at_most_a_few_rows_the_others_join_with_the_map(
    serving_state, demo, monkeypatch
):
    """Issue 58 item 2: half of a 31 s first picture was encoding 1,000 test utterances nobody
    had encoded yet. The picture draws the rows whose vectors are there, and at most
    ``FIRST_PICTURE`` more (the labelled first); the others are encoded with the projection,
    in the background, and the finished map has every row."""
    from app.services.labelling.data import add_utterance

    release = threading.Event()
    monkeypatch.setattr(svc, "FIRST_PICTURE", 20)
    monkeypatch.setattr(
        serving_state.maps.projector,
        "project",
        lambda vectors, method: release.wait(60) and np.zeros((len(vectors), 2), np.float32),
    )
    warm = svc.compute_map(serving_state.maps, demo, method="pca")  # every row encoded
    for i in range(30):  # just imported: no vector yet
        add_utterance(
            serving_state.db, demo, f"a brand new question number {i} about parcels", [], "test"
        )
    encoded = serving_state.live.cache.encoded
    first = svc.get_map(serving_state.maps, demo, method="umap")
    assert (
        first.provisional and serving_state.live.cache.encoded == encoded
    )  # nothing encoded for it
    assert len(first.ids) == len(warm.ids) and first.waiting == 30
    release.set()
    deadline = time.time() + 60
    while (view := svc.get_map(serving_state.maps, demo, method="umap")).provisional:
        assert time.time() < deadline
        time.sleep(0.05)
    assert len(view.ids) == len(warm.ids) + 30 and view.waiting == 0


def test_a_pca_map_is_drawn_at_once(serving_state, demo):
    view = svc.get_map(serving_state.maps, demo, method="pca")
    assert not view.provisional and view.method == "pca"


def test_compare_and_explain(serving_state, demo):
    base = svc.compute_map(serving_state.maps, demo, method="pca", version=BASE)
    active = svc.compute_map(serving_state.maps, demo, method="pca")
    fig = svc.compare_figure(base, active)
    assert len({t.xaxis for t in fig.data}) == 2
    train_id = next(i for i, s in zip(active.ids, active.splits, strict=True) if s == "train")
    ex = svc.explain_utterance(serving_state.factories, demo, train_id)
    assert ex["id"] == train_id and ex["runner_up_neighbour"] is not None
    assert all(n["id"] != train_id for n in ex["neighbours"])  # scored without itself
    assert ex["margin"] == pytest.approx(ex["score"] - ex["runner_up_score"])
    with pytest.raises(ValueError, match="Unknown projection"):
        svc.get_map(serving_state.maps, demo, method="mds")


def test_the_approximate_neighbour_kernels_are_compiled_only_for_a_project_that_needs_them(
    serving_state, demo
):
    """A start-up compiles UMAP's kernels for maps of 4,096 points and more (about 50 s of a
    core) only when a project is that large."""
    from app.services.projects.io import import_utterances
    from core.projection import APPROXIMATE_FROM
    from storage.utterances import NewUtterance

    assert not draws_large_maps(serving_state.db)
    rows = [NewUtterance(f"question number {i}", split="unlabelled") for i in range(4_000)]
    import_utterances(serving_state.db, destination(serving_state.db, "big"), rows)
    assert not draws_large_maps(serving_state.db)  # 4,000 rows: UMAP still finds neighbours exactly
    more = APPROXIMATE_FROM - 4_000
    import_utterances(
        serving_state.db,
        destination(serving_state.db, "big"),
        [NewUtterance(f"another one {i}") for i in range(more)],
    )
    assert draws_large_maps(serving_state.db)


def test_the_reports_map_draws_the_labelled_rows_and_a_sample_of_the_others(
    serving_state, demo, monkeypatch
):
    full = svc.compute_map(serving_state.maps, demo, method="pca")
    labelled = {i for i, s in zip(full.ids, full.splits, strict=True) if s in ("train", "test")}
    others = len(full.ids) - len(labelled)
    assert others > 2
    view = svc.sampled_map(serving_state.maps, demo, unlabelled=2)
    assert view is not None and labelled <= set(view.ids) and len(view.ids) == len(labelled) + 2
    assert (
        svc.sampled_map(serving_state.maps, demo, unlabelled=2, method="umap") is None
    )  # not cached: None
    monkeypatch.setattr(
        serving_state.maps.projector,
        "project",
        lambda v, method: np.arange(2 * len(v), dtype=np.float32).reshape(-1, 2),
    )
    umap = svc.compute_map(serving_state.maps, demo, method="umap")
    cut = svc.sampled_map(serving_state.maps, demo, unlabelled=2, method="umap")
    assert cut is not None and cut.ids == view.ids and cut.method == "umap"
    at = {i: p.tolist() for i, p in zip(umap.ids, umap.points, strict=True)}
    assert [p.tolist() for p in cut.points] == [at[i] for i in cut.ids]  # the full map's points


def test_a_map_holds_every_row_and_a_lasso_selects_the_rows_it_did_not_draw(
    serving_state, demo, monkeypatch
):
    """Issue 72 item 4, with the caps lowered as a test can: the map holds every row of the
    project past the old cap of the points it held (``MAX_POINTS``, 20,000, lowered to 30 here);
    its figure draws a sample (``DRAWN_MAX``: every labelled row and 10 others) over a shading
    that counts every row and says so; a box or a lasso on it selects every row inside the
    region, drawn or not; a region of no view of the project is refused in words."""
    import json

    from app.services.labelling.data import add_utterance

    for i in range(40):
        add_utterance(
            serving_state.db, demo, f"is parcel number {i} on its way to me", [], "unlabelled"
        )
    monkeypatch.setattr(svc, "MAX_POINTS", 30, raising=False)  # the old cap, lowered
    view = svc.compute_map(serving_state.maps, demo, method="pca")
    with serving_state.db.session() as s:
        from storage.utterances import count_utterances

        total = count_utterances(s, demo.id)
    assert len(view.ids) == total > 70  # every row, past the cap

    from app.services.design import map_figures, map_region

    labelled = sum(s != "unlabelled" for s in view.splits)
    monkeypatch.setattr(map_figures, "DRAWN_MAX", labelled + 10)
    fig = svc.map_figure(view)
    drawn = {int(i) for t in fig.data if t.customdata is not None for i in t.customdata}
    assert len(drawn) == labelled + 10 and fig.data[0].type == "heatmap"  # the shading first
    meta = fig.layout.meta
    assert meta["n_rows"] == total and meta["others"] == [10, total - labelled]
    assert meta["view"] == view.token

    pts = np.asarray(view.points)
    xs = np.unique(pts[:, 0])
    cut_x = float(xs[len(xs) // 2] + xs[len(xs) // 2 + 1]) / 2  # between two points
    low, high = float(pts[:, 1].min()) - 1, float(pts[:, 1].max()) + 1
    box = {"view": view.token, "box": [[float(pts[:, 0].min()) - 1, cut_x], [low, high]]}
    ids, rows = map_region.select_region(serving_state.maps, demo, json.dumps(box))
    left = {int(i) for i, (x, _) in zip(view.ids, pts, strict=True) if x <= cut_x}
    assert set(ids) == left and rows == total
    assert left - drawn  # rows inside the region that were not drawn are selected
    lasso = {
        "view": view.token,
        "x": box["box"][0] + box["box"][0][::-1],
        "y": [low, low, high, high],
    }
    assert map_region.select_region(serving_state.maps, demo, json.dumps(lasso))[0] == ids

    with pytest.raises(ValueError, match="The map changed since it was drawn"):
        map_region.select_region(
            serving_state.maps, demo, json.dumps({**box, "view": "not-a-view"})
        )
    with pytest.raises(ValueError, match="three points at least"):
        map_region.select_region(
            serving_state.maps, demo, json.dumps({"view": view.token, "x": [0], "y": [0]})
        )
    with pytest.raises(ValueError, match="No region was selected"):
        map_region.select_region(serving_state.maps, demo, "{not json")


def test_past_drawn_max_a_view_ranks_only_the_rows_its_figure_draws(
    serving_state, demo, monkeypatch
):
    """A view ranks the rows its figure draws (every labelled row and the sample of the others):
    the other rows of a large map have no prediction (ranking 250,000 rows took 48 s, again at
    every label); the figure draws exactly the ranked ones, and the report's sample of
    unlabelled rows is taken among them."""
    from app.services.design import map_figures
    from storage.utterances import count_utterances

    with serving_state.db.session() as s:
        labelled_n = sum(count_utterances(s, demo.id, split=x) for x in ("train", "test"))
    monkeypatch.setattr(map_figures, "DRAWN_MAX", labelled_n + 10, raising=False)
    view = svc.compute_map(serving_state.maps, demo, method="pca")
    ranked = {i for i, m in zip(view.ids, view.margins, strict=True) if not np.isnan(m)}
    labelled = {i for i, s in zip(view.ids, view.splits, strict=True) if s != "unlabelled"}
    assert len(view.ids) > labelled_n + 10 and len(ranked) == labelled_n + 10
    assert len(labelled) == labelled_n and labelled <= ranked
    unranked = [p for i, p in zip(view.ids, view.predicted, strict=True) if i not in ranked]
    assert unranked and set(unranked) == {None}
    fig = svc.map_figure(view)
    drawn = {int(i) for t in fig.data if t.customdata is not None for i in t.customdata}
    assert drawn == ranked
    monkeypatch.setattr(
        serving_state.maps.projector, "project", lambda v, m: np.zeros((len(v), 2), "f4")
    )
    svc.compute_map(serving_state.maps, demo, method="umap")
    report = svc.sampled_map(serving_state.maps, demo, method="umap", unlabelled=5)
    assert report is not None and set(report.ids) <= ranked


def test_the_maps_timer_draws_nothing_while_the_projection_is_computed(
    serving_state, demo, monkeypatch
):
    """The Map's timer asks for the map every second while UMAP runs and kept the quick picture
    on screen, yet built a figure each time (its names placed: a third of a second of CPU on a
    300-intent map). Now a tick draws nothing until the projection lands; then it draws it."""
    from app.ui import map_view

    release = threading.Event()

    def slow(vectors, method):
        release.wait(60)
        return np.full((len(vectors), 2), 7.0, dtype=np.float32)

    drawn: list[str] = []
    real = svc.map_figure

    def figure(view, **kwargs):
        drawn.append(view.method)
        return real(view, **kwargs)

    monkeypatch.setattr(serving_state.maps.projector, "project", slow)
    monkeypatch.setattr(svc, "map_figure", figure)
    first = map_view.render(serving_state.maps, demo, "umap", map_view.VIEW_CHOICES[0], "none")
    assert first[2]["active"] and drawn == ["pca"]  # a person's render: the quick picture
    tick = map_view.poll_render(serving_state.maps, demo, "umap", map_view.VIEW_CHOICES[0], "none")
    assert tick[2]["active"] and tick[0] == tick[1] == {"__type__": "update"}
    assert drawn == ["pca"]  # nothing built for the tick
    release.set()
    deadline = time.time() + 60
    while tick[2]["active"] and time.time() < deadline:
        time.sleep(0.05)
        tick = map_view.poll_render(
            serving_state.maps, demo, "umap", map_view.VIEW_CHOICES[0], "none"
        )
    assert not tick[2]["active"] and drawn == ["pca", "umap"]
    assert tick[0].layout.meta["n_points"] > 0
