"""Anchors in the app: an intent with only a description predicts at once (cold start), the
explanation says its description decided, a new label counts at once, a bundle of the project
predicts the same, and the setting is one CLI command (a bad value exits 2, nothing changed)."""

from __future__ import annotations

import json

import pytest

from app.cli import main
from app.services.labelling import data as data_svc
from app.services.models.predict import predict, predict_one
from app.services.projects import bundles, projects
from core.bundle import load
from core.encoding import anchor_encoder_of
from tests.handles import live

GIFT = "Buying, sending or spending a gift card or gift voucher"
QUESTION = "can I buy a gift voucher for my sister"


def test_a_new_intent_with_only_a_description_predicts_a_matching_question(serving_state, demo):
    projects.set_settings(serving_state.db, demo, {"anchor_weight": "1"})
    data_svc.create_intent(serving_state.db, demo, "gift_cards", GIFT)
    out = predict_one(serving_state.live, demo, QUESTION)
    assert out["top"] == "gift_cards" and out["labels"] == ["gift_cards"]
    said = out["explanation"]
    assert said["predicted_by_anchor"]
    assert (
        f"no labelled examples yet: its description '{GIFT}' ({out['score']:.2f})"
        in (said["sentence"])
    )
    # the first label counts in the very next prediction: the intent is no longer cold
    data_svc.add_utterance(
        serving_state.db, demo, "do you sell gift cards", ["gift_cards"], "train"
    )
    again = predict_one(serving_state.live, demo, QUESTION)
    assert again["top"] == "gift_cards" and not again["explanation"]["predicted_by_anchor"]
    assert again["intents"][0]["best"]["text"] == "do you sell gift cards"
    assert "and its description" in again["explanation"]["sentence"]


def test_without_anchors_an_intent_with_no_examples_is_never_predicted(serving_state, demo):
    projects.set_settings(serving_state.db, demo, {"anchor_weight": "off"})
    data_svc.create_intent(serving_state.db, demo, "gift_cards", GIFT)
    out = predict_one(serving_state.live, demo, QUESTION)
    assert all(s["intent"] != "gift_cards" for s in out["intents"])
    assert all("anchor" not in s for s in out["intents"])


def test_a_bundle_of_a_project_with_anchors_predicts_like_the_app(serving_state, demo, tmp_path):
    projects.set_settings(serving_state.db, demo, {"anchor_weight": 2})
    data_svc.create_intent(serving_state.db, demo, "gift_cards", GIFT)
    queries = [QUESTION, "where is my parcel", "I forgot my password"]
    app_rows = predict(serving_state.live, demo, queries)
    path = tmp_path / "demo.zip"
    bundles.export_bundle(serving_state.live, demo, path)
    with load(path) as bundle:
        assert bundle.manifest["anchors"]["texts"]["gift_cards"] == GIFT
        for a, b in zip(app_rows, bundle.predict(queries), strict=True):
            assert (a["top"], a["labels"]) == (b["top"], b["labels"])
            assert a["score"] == pytest.approx(b["score"], abs=1e-4)
    # opened as a project, the bundle keeps the anchors: same cold-start prediction
    opened = bundles.import_bundle(serving_state.factories, path)
    assert projects.anchors(serving_state.db, live(serving_state, opened))["weight"] == 2
    assert (
        predict_one(serving_state.live, live(serving_state, opened), QUESTION)["top"]
        == "gift_cards"
    )


def test_the_cli_sets_the_weight_and_refuses_a_bad_one(tmp_path, capsys):
    d = ["--data-dir", str(tmp_path / "data")]
    src = tmp_path / "in.csv"
    src.write_text("text,label,description\nwhere is my parcel,track_parcel,\n,refund,Money back\n")
    assert main([*d, "import", str(src), "--project", "p"]) == 0
    capsys.readouterr()
    settings = [*d, "settings", "--project", "p"]
    assert main([*settings, "--set", "anchor_weight=1.5"]) == 0
    out = capsys.readouterr().out
    assert "Anchors on (weight 1.5): 2 intent(s), 1 by their description" in out
    assert main([*settings, "--set", "anchor_weight=-1"]) == 2
    assert "0 or more" in capsys.readouterr().err
    assert main([*settings, "--set", "anchor_weight=lots"]) == 2
    assert main([*settings, "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["anchor_weight"] == 1.5
    assert shown["anchor_texts"] == {"refund": "Money back", "track_parcel": "track parcel"}


@pytest.mark.slow
def test_an_older_bundle_with_a_separate_label_encoder_still_embeds_the_anchors_with_it(
    serving_state, tmp_path, encoder
):
    """The separate label encoder is no longer trained (it lost on both bench data sets), but a
    version that has one, here from an older bundle, keeps putting its anchors where it did."""
    from app import worker
    from app.services.models.versions import resolve_encoder
    from app.services.training import retrain_jobs
    from tests.samples import QUICK, cut_copy, make_tiny, rewrite_bundle

    make_tiny(serving_state)
    data_svc.describe_intent(
        serving_state.db, live(serving_state, "tiny"), "refund", "Money back for an order"
    )
    projects.set_settings(serving_state.db, live(serving_state, "tiny"), {"anchor_weight": 1})
    with pytest.raises(ValueError, match="label_encoder='separate' is no longer an option"):
        retrain_jobs.request_retrain(
            serving_state.training,
            live(serving_state, "tiny"),
            {**QUICK, "label_encoder": "separate"},
        )
    job, _ = retrain_jobs.request_retrain(
        serving_state.training, live(serving_state, "tiny"), QUICK, enqueue=False
    )
    worker.execute_job(serving_state, job.id)
    bundles.export_bundle(serving_state.live, live(serving_state, "tiny"), tmp_path / "new.zip")

    label_dir = tmp_path / "label"
    cut_copy(encoder.model, 2).save(str(label_dir), safe_serialization=True)

    def as_trained_with_a_label_encoder(members: dict[str, bytes]) -> None:
        for f in label_dir.rglob("*"):
            if f.is_file():
                members[f"label_encoder/{f.relative_to(label_dir)}"] = f.read_bytes()
        for name in ("model.json", "manifest.json"):
            meta = json.loads(members[name])
            meta["config"].update(label_encoder="separate", label_layers=2)
            members[name] = json.dumps(meta).encode()

    old = rewrite_bundle(
        tmp_path / "new.zip", tmp_path / "old.zip", as_trained_with_a_label_encoder
    )
    project = bundles.import_bundle(serving_state.factories, old)
    version = projects.summary(
        serving_state.db, live(serving_state, project)
    ).active_model_version_id
    utterances, _ = resolve_encoder(serving_state.factories, live(serving_state, project), version)
    labels = anchor_encoder_of(utterances)  # the version's reader gave it its label encoder
    assert labels is not utterances and labels.fingerprint != utterances.fingerprint
    anchors = ["Money back for an order", "card lost"]
    query = utterances.encode([QUESTION])[0]
    by_label, by_utterances = labels.encode(anchors) @ query, utterances.encode(anchors) @ query
    assert abs(by_label[0] - by_utterances[0]) > 1e-3  # the two spaces tell them apart
    out = predict_one(serving_state.live, live(serving_state, project), QUESTION)
    sims = {s["intent"]: s["anchor"] for s in out["intents"]}
    assert sims["refund"] == pytest.approx(by_label[0], abs=1e-4)
    assert sims["card_lost"] == pytest.approx(by_label[1], abs=1e-4)
    # through the embedding cache under the label encoder's own fingerprint, never the other's
    assert serving_state.live.cache.lookup(labels.fingerprint, anchors)[0] is not None
    assert serving_state.live.cache.lookup(utterances.fingerprint, anchors) == [None, None]
    # exported again, the bundle carries the anchors as the label encoder put them
    bundles.export_bundle(serving_state.live, live(serving_state, project), tmp_path / "again.zip")
    with load(tmp_path / "again.zip") as bundle:
        row = bundle.predict([QUESTION])[0]
    assert {s["intent"]: s["anchor"] for s in row["intents"]} == pytest.approx(sims, abs=1e-4)


def test_a_remembered_evaluation_tells_apart_two_encoders_of_the_anchors(encoder):
    """The evaluation memo's key names the anchors' encoder: the same utterance encoder with a
    separate label encoder (an older version's) is not the same evaluation."""
    from app.serving.eval_memo import evaluation_key
    from core.encoding.registry import encoder_from_model
    from core.evaluation import EvalData
    from core.retrieval.factory import Anchors, PredictorFactory
    from tests.samples import cut_copy

    def version(anchors: bool):
        utterances = encoder_from_model(encoder.model, "minilm+fast", "fast@0123")
        if anchors:
            utterances.anchors = encoder_from_model(
                cut_copy(encoder.model, 2), "minilm+fast+label", "fast-label@4567"
            )
        texts = {"refund": "Money back for an order"}
        vectors = anchor_encoder_of(utterances).encode(list(texts.values()))
        return PredictorFactory(utterances, anchors=Anchors(texts, 1.0, vectors))

    data = EvalData(["money back please"], [("refund",)], [], [])

    def key(factory):
        return evaluation_key(factory, data, multi_label=False, head=None)

    assert key(version(False)) == key(version(False)) != key(version(True))


def test_a_factory_takes_the_settings_of_the_handle_it_is_given_not_the_row_read_again(
    serving_state, demo
):
    """A request reads its project's settings once, with its handle; the Predictor factory it
    asks for is built from those, not from the project's row read again, so one request sees
    one set of settings even while another request changes them."""
    p = demo.handle()  # resolved once, at the request's edge
    projects.set_settings(serving_state.db, demo, {"anchor_weight": "off", "encode_context": "on"})
    encoder = serving_state.models.base_encoder(p.base_encoder)
    factory = serving_state.factories.predictor_factory(p.id, encoder, p.settings)
    assert factory.anchors is not None and factory.anchors.weight == 1.0
    assert not factory.use_context
    now = demo.handle().settings  # the next request's
    assert (now.anchor_weight, now.encode_context) == (0.0, True)
    later = serving_state.factories.predictor_factory(p.id, encoder, now)
    assert later.anchors is None and later.use_context
