"""The int8 encoder live: a retrain exports it with a parity check on the version's own utterances;
a version whose int8 passed serves it (queries and pool alike), the project setting off or a failed
or missing int8 copy serves fp32. The same retrain calibrates out of scope on held-out encoders
(the project's ``oos_calibration`` forced to ``held-out`` on this CPU, issue 55): the version
serves before that phase ends, then with its held-out thresholds, and every recalibration of its
pool applies the correction."""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from typing import ClassVar

import numpy as np
import pytest

from app import worker
from app.cli import main
from app.project_settings import ProjectSettings
from app.services.models import predict as predict_svc
from app.services.models import versions as version_svc
from app.services.models.calibration import calibration_line
from app.services.models.int8 import export_version_int8, parity_split
from app.services.projects import projects as project_svc
from app.services.projects.projects import DEMO_PROJECT as DEMO
from app.services.queue import queue_order
from app.services.training import retrain_jobs
from app.serving.int8 import int8_folder, load_int8
from core.bundle.onnx_encoder import OnnxEncoder
from core.encoding.registry import Encoder
from core.evaluation import EvalData
from core.evaluation.version_metrics import VersionMetrics
from storage.projects import get_project
from storage.tables import ModelVersion
from storage.utterances import list_utterances
from storage.versions import active_version
from tests.handles import live
from tests.samples import QUICK

pytestmark = pytest.mark.slow


class _Watching(worker.JobReporter):
    """The worker's reporter, which, when the int8 phase starts, looks at the project as the
    app's server sees it then (another context on the same data directory)."""

    server = None
    seen: ClassVar[dict] = {}
    calibrating: ClassVar[dict] = {}
    vectors_counted: ClassVar[list] = []  # (the job's phase, done, total, time left)
    candidates: ClassVar[list] = []  # (in a space about to serve, after the switch's record)

    def vectors(self, done, total, eta) -> None:
        super().vectors(done, total, eta)
        _Watching.vectors_counted.append((self._tracker.phase, done, total, eta))

    def log(self, line, *, phase=None) -> None:
        if phase == "calibrating" and not _Watching.calibrating:
            server, job = _Watching.server, retrain_jobs.job(self.training, self.job_id)
            with server.db.session() as s:
                mv = active_version(s, job.project_id)
            pool = server.live.pool(job.project_id)
            answer = predict_svc.predict_one(server.live, live(server, DEMO), "hi")
            _Watching.calibrating.update(
                job=job,
                version=mv.id,
                model_version=pool.model_version_id,
                calibration=pool.calibration,
                thresholds=dict(pool.predictor.thresholds),
                answer=answer["top"],
            )
        if " switched to its int8 copy" in line and "switched" not in _Watching.seen:
            # what the server's cache holds in the copy's space as the switch is recorded: it
            # reads the space's shards as it first uses it, and encodes whatever is missing
            server, job = _Watching.server, retrain_jobs.job(self.training, self.job_id)
            with server.db.session() as s:
                mv = active_version(s, job.project_id)
                texts = [r.text for r in list_utterances(s, job.project_id, split="unlabelled")]
            copy = load_int8(
                int8_folder(
                    server.artifacts, mv.artifact_path, VersionMetrics.from_dict(mv.metrics)
                )
            )
            _Watching.seen["switched"] = (len(texts), server.live.cache.missing(copy, texts))
        if phase == "int8" and "job" not in _Watching.seen:
            server, job = _Watching.server, retrain_jobs.job(self.training, self.job_id)
            with server.db.session() as s:
                mv = active_version(s, job.project_id)
            pool = server.live.pool(job.project_id)
            answer = predict_svc.predict_one(server.live, live(server, DEMO), "hi")
            _Watching.seen.update(
                job=job,
                version=mv.id,
                encoder=pool.encoder,
                model_version=pool.model_version_id,
                copies=sorted(
                    f.name for f in server.artifacts.path(mv.artifact_path).parent.iterdir()
                ),
                answer=answer["top"],
            )
        super().log(line, phase=phase)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One retrain for the module (minutes on a loaded CPU): the demo project with a retrained,
    active version (its 40 test utterances check parity). The tests run in file order and the
    last one breaks the version's int8 copy. A second context on the same data directory plays
    the app's server, which looks at the project when the retrain's int8 phase starts."""
    from app.config import load_settings
    from app.services.projects.projects import ensure_demo_project
    from app.serving.state import ServingState

    settings = dataclasses.replace(
        load_settings(tmp_path_factory.mktemp("int8") / "data"), int8=True
    )
    context = ServingState.open(settings)
    server = ServingState.open(settings)
    demo = live(context, ensure_demo_project(context.db))
    project_svc.set_settings(context.db, demo, {"oos_calibration": "held-out"})
    demo = live(context, DEMO)
    job, _ = retrain_jobs.request_retrain(context.training, demo, QUICK, enqueue=False)
    _Watching.server, _Watching.seen, _Watching.calibrating = server, {}, {}
    _Watching.vectors_counted, _Watching.candidates = [], []
    real = queue_order.encode_candidates

    def candidates(live_pools, p, progress=None, encoder=None):
        # which space the queue's candidates go through, before or after the switch's record
        _Watching.candidates.append((encoder is not None, "switched" in _Watching.seen))
        return real(live_pools, p, progress=progress, encoder=encoder)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(worker, "JobReporter", _Watching)
        patch.setattr(queue_order, "encode_candidates", candidates)
        worker.execute_job(context, job.id)
    version_svc.activate(
        context.factories, demo, retrain_jobs.job(context.training, job.id).model_version_id
    )
    yield context, demo, server
    server.close()
    context.close()


@pytest.fixture
def serving_state(served):
    return served[0]


@pytest.fixture
def trained(served):
    return served[1]


def test_a_new_version_serves_fp32_before_its_int8_copy_exists_then_switches(served):
    """Issue 55: on a CPU the version answers as soon as it is measured, in fp32; its int8 copy
    is built after, and replaces it in the app's server once it passed parity (the switch is
    logged, both measurements shown)."""
    serving_state, demo, server = served
    seen = _Watching.seen
    # when the int8 phase started the version was registered, active and answering in the
    # server's process with its fp32 encoder; no int8 copy existed
    assert seen["job"].status == "running" and seen["job"].model_version_id == seen["version"]
    assert seen["model_version"] == seen["version"]
    assert type(seen["encoder"]) is Encoder
    assert (
        seen["encoder"].fingerprint
        == serving_state.models.encoder_for_version(_state(serving_state, demo)[1]).fingerprint
    )
    assert not any(name.endswith("-int8") for name in seen["copies"])
    assert seen["answer"]
    # the job then built the copy, checked it, measured it and switched the version to it
    _, mv = _state(serving_state, demo)
    recorded = VersionMetrics.from_dict(mv.metrics)
    assert recorded.measured_with == "int8" and recorded.fp32.measured_with == "fp32"
    assert mv.metrics["int8"]["artifact"] == f"{mv.artifact_path}-int8"
    assert serving_state.artifacts.verify(
        mv.artifact_path, mv.artifact_sha256
    )  # its own files unchanged
    done = retrain_jobs.job(serving_state.training, seen["job"].id)
    assert done.status == "succeeded"
    assert f"v{mv.id} is active: it answers in fp32" in done.log
    assert f"v{mv.id} switched to its int8 copy: top-1 agreement" in done.log
    # the server's pool follows the switch at its next prediction (the project's stamp moved)
    assert isinstance(server.live.pool(mv.project_id).encoder, OnnxEncoder)
    # the first card's utterances in the int8 copy's space are registering's count, their time
    # left measured (it was planned alone: "about 0 s" for 8 s where they took twice the plan)
    counted = [c for c in _Watching.vectors_counted if c[0] == "registering" and c[2]]
    assert counted and counted[-1][1] == counted[-1][2] and counted[-1][3] == 0.0, counted
    with serving_state.db.session() as s:
        unlabelled = len(list_utterances(s, mv.project_id, split="unlabelled"))
    assert 0 < counted[-1][2] <= unlabelled
    # ... encoded before the switch was recorded: the server switching to the copy finds them in
    # the cache instead of encoding them beside the worker
    candidates, missing = seen["switched"]
    assert candidates == unlabelled and missing == [], (candidates, missing[:3])
    # ... once, in the copy's space: after the switch the worker no longer reads them again
    # to find each in the cache
    assert _Watching.candidates == [(True, False)], _Watching.candidates


def test_the_version_serves_before_its_held_out_calibration_ends_then_with_its_thresholds(served):
    """Issue 55: the held-out calibration (5 more trainings) runs after the version serves: when
    it started, the version answered in the app's server with the thresholds of its pool's own
    scores; once it ended, the server's pool serves the thresholds the version recorded, made by
    its correction, and says what calibrated them."""
    serving_state, demo, server = served
    seen = _Watching.calibrating
    assert seen["job"].status == "running" and seen["job"].model_version_id == seen["version"]
    assert seen["model_version"] == seen["version"] and seen["answer"]
    quick = seen["calibration"]
    assert quick.corrected_by is None and seen["thresholds"] == quick.thresholds
    _, mv = _state(serving_state, demo)
    record = mv.metrics["oos_calibration"]
    assert record["method"] == "held-out" and record["folds"] == 5
    # its trained examples (multi-label ones too); those held out: the single-label ones
    assert record["trained"] >= record["held"] >= record["scores"] >= 20
    assert record["pool_thresholds"]["default"] == pytest.approx(quick.default, abs=1e-5)
    assert record["thresholds"]["default"] != pytest.approx(quick.default)
    # recorded = served: the server's pool calibrates with the correction, to those thresholds
    pool = server.live.pool(mv.project_id)
    assert pool.calibration.corrected_by.startswith(f"v{mv.id}'s held-out calibration")
    assert 0 < pool.calibration.n_corrected <= record["held"]
    # the same thresholds up to float noise: the server and the job encode the pool in batches
    # of their own (CI saw 0.3951977 against 0.3951982)
    served_default = pool.predictor.thresholds["default"]
    assert served_default == pytest.approx(record["thresholds"]["default"], abs=1e-5)
    explained = project_svc.out_of_scope(server.live, live(server, DEMO))["message"]
    assert f"Calibrated by v{mv.id}'s held-out calibration" in explained
    assert f"from their own scores it would be {quick.default:.2f}" in explained
    done = retrain_jobs.job(serving_state.training, seen["job"].id)
    assert done.status == "succeeded"
    assert f"Out of scope: v{mv.id}'s thresholds come from its held-out calibration" in done.message
    assert "calibrating out of scope on 5 held-out encoders" in done.log
    assert f"Out of scope: v{mv.id}'s thresholds" in mv.note


def _state(serving_state, project):
    with serving_state.db.session() as s:
        p = get_project(s, str(project))
        mv = active_version(s, p.id)
        assert mv is not None
        return p.id, mv


def test_a_version_whose_int8_passed_serves_it_and_agrees_with_fp32(serving_state, trained):
    pid, mv = _state(serving_state, trained)
    info = mv.metrics["int8"]
    assert info["passed"] is True and info["agreement"] >= 0.99 and info["n"] == 40
    folder = int8_folder(
        serving_state.artifacts, mv.artifact_path, VersionMetrics.from_dict(mv.metrics)
    )
    assert (folder / "model.int8.onnx").is_file()

    pool = serving_state.live.pool(pid)
    assert isinstance(pool.encoder, OnnxEncoder)
    # the pool's vectors are the int8 encoder's own
    text = next(iter(pool.items.values()))[0]
    assert np.allclose(
        serving_state.live.cache.encode(pool.encoder, [text]), pool.encoder.encode([text])
    )

    texts = [t for t, _ in pool.items.values()]
    int8_out = predict_svc.predict(serving_state.live, live(serving_state, trained), texts, show=0)
    fp32 = serving_state.models.encoder_for_version(mv)
    vecs = fp32.encode(texts)
    fp32_top = [p.top for p in _fp32_index(pool, vecs).classify(vecs, k=1, show=0)]
    agree = np.mean([a["top"] == b for a, b in zip(int8_out, fp32_top, strict=True)])
    assert agree >= 0.99
    assert "int8 ONNX" in version_svc.serving(serving_state.db, live(serving_state, trained))


def test_a_version_records_and_gates_on_the_int8_encoder_that_serves_it(
    serving_state, trained, tmp_path
):
    """Recorded = served (issue 46): the version's metrics and its gate are the int8 copy's, the
    same numbers a fresh measurement of the served Predictor gives (own cache, nothing
    remembered) and that Try's answers on the test rows reproduce; the fp32 encoder's stand
    beside them, labelled, and are what the version shows once the project turns int8 off."""
    from app.services.models.evaluation import evaluate_version, evaluation_inputs, live_evaluation
    from core.encoding.cache import EmbeddingCache

    p = live(serving_state, trained)
    _, mv = _state(serving_state, trained)
    recorded = VersionMetrics.from_dict(mv.metrics)
    assert recorded.measured_with == "int8" and recorded.fp32 is not None
    assert recorded.fp32.measured_with == "fp32"
    assert "int8 encoder that serves it" in recorded.gate["reason"]

    factory, _, data, multi = evaluation_inputs(serving_state.factories, p)
    assert isinstance(factory.encoder, OnnxEncoder) and not multi
    fresh, _ = evaluate_version(factory, data, EmbeddingCache(tmp_path / "cache"))
    assert (fresh.accuracy, fresh.macro_f1) == (recorded.accuracy, recorded.macro_f1)
    answers = predict_svc.predict(serving_state.live, p, data.test_texts, show=0)
    hits = [a["top"] in gold for a, gold in zip(answers, data.test_labels, strict=True)]
    assert np.mean(hits) == pytest.approx(recorded.accuracy)
    shown = version_svc.metrics(serving_state.db, p)
    assert shown.measured_with == "int8" and shown.accuracy == recorded.accuracy
    assert live_evaluation(serving_state.factories, p).accuracy == recorded.accuracy

    fp32, _ = evaluate_version(
        serving_state.factories.version_factory(p.id, mv, p.base_encoder, p.settings),
        data,
        serving_state.live.cache,
    )
    assert fp32.accuracy == recorded.fp32.accuracy
    project_svc.set_settings(serving_state.db, p, {"serve_int8": "off"})
    try:
        p = live(serving_state, trained)
        shown = version_svc.metrics(serving_state.db, p)
        assert shown.measured_with == "fp32" and shown.accuracy == fp32.accuracy
        assert shown.gate == recorded.gate and shown.base == recorded.base
        assert live_evaluation(serving_state.factories, p).accuracy == fp32.accuracy
    finally:
        project_svc.set_settings(serving_state.db, p, {"serve_int8": "on"})


def test_the_active_versions_map_is_drawn_in_the_space_that_serves_it(serving_state, trained):
    """Its first map encodes nothing: the pool, the queue and the test split already have their
    int8 vectors (the retrain's parity check and first card); its colours are what Try says."""
    from app.services.design import maps

    factory, _ = maps.map_factory(serving_state.factories, trained, None)
    assert isinstance(factory.encoder, OnnxEncoder)
    before = serving_state.live.cache.encoded
    view = maps.get_map(serving_state.maps, live(serving_state, trained), method="pca")
    assert serving_state.live.cache.encoded == before
    row = next(i for i, s in zip(view.ids, view.splits, strict=True) if s == "test")
    text = view.texts[view.ids.index(row)]
    assert (
        view.predicted[view.ids.index(row)]
        == predict_svc.predict_one(serving_state.live, live(serving_state, trained), text)["top"]
    )


def _fp32_index(pool, vecs):
    from core.retrieval.knn import KnnIndex

    index = KnnIndex(vecs.shape[1])
    items = list(pool.items.items())
    index.add(
        [i for i, _ in items], vecs, [t for _, (t, _) in items], [lab for _, (_, lab) in items]
    )
    return index


def test_the_setting_off_serves_fp32_and_on_again_int8(serving_state, trained, capsys):
    pid, _ = _state(serving_state, trained)
    project_svc.set_settings(serving_state.db, live(serving_state, trained), {"serve_int8": "off"})
    line = version_svc.serving(serving_state.db, live(serving_state, trained))
    assert "fp32" in line and "turned off" in line
    assert isinstance(serving_state.live.pool(pid).encoder, Encoder)
    assert (
        predict_svc.predict(
            serving_state.live, live(serving_state, trained), ["where is my parcel"]
        )[0]["top"]
        == "track_order"
    )

    data_dir = str(serving_state.settings.data_dir)
    on = ["--set", "serve_int8=on"]
    assert main(["--data-dir", data_dir, "settings", "--project", str(trained), *on]) == 0
    assert "Serving: int8 ONNX" in capsys.readouterr().out
    assert isinstance(serving_state.live.pool(pid).encoder, OnnxEncoder)


def test_the_int8_copy_of_an_older_version_embeds_its_anchors_with_its_label_encoder(
    serving_state, trained
):
    """A version trained with a separate label encoder (an option that has left TrainConfig)
    serving its int8 copy: the copy encodes the utterances, the label encoder the anchors, as
    before; a version trained since embeds its anchors with its int8 copy itself."""
    from app.serving.models import Models
    from core.encoding import anchor_encoder_of
    from tests.samples import cut_copy

    _, mv = _state(serving_state, trained)
    folder = serving_state.artifacts.path("older-label")
    shutil.copytree(serving_state.artifacts.path(mv.artifact_path), folder)
    label = cut_copy(serving_state.models.encoder_for_version(mv).model, 2)
    label.save(str(folder / "label_encoder"), safe_serialization=True)
    meta = json.loads((folder / "model.json").read_text())
    meta["config"].update(label_encoder="separate", label_layers=2)
    (folder / "model.json").write_text(json.dumps(meta))
    older = ModelVersion(
        id=mv.id,
        method=mv.method,
        base_encoder=mv.base_encoder,
        config=meta["config"],
        metrics=mv.metrics,
        artifact_path="older-label",
        artifact_sha256="older",
    )
    models = Models(serving_state.artifacts, "cpu")
    served = models.serving_encoder(older, older.base_encoder, ProjectSettings())
    assert isinstance(served, OnnxEncoder)
    labels = anchor_encoder_of(served)
    assert labels is not served and labels.fingerprint.startswith(f"{mv.method}-label@")
    fp32 = models.encoder_for_version(older)
    assert labels.fingerprint == anchor_encoder_of(fp32).fingerprint != fp32.fingerprint
    texts = ["Money back for an order", "where is my parcel"]
    np.testing.assert_allclose(labels.encode(texts), label.encode(texts), atol=1e-5)
    current = models.serving_encoder(mv, mv.base_encoder, ProjectSettings())
    assert isinstance(current, OnnxEncoder) and anchor_encoder_of(current) is current


def _bundle_answers(serving_state, project, path, texts, tmp, **options):
    """Export a bundle of the project and run its own predict.py in a bare environment (numpy,
    onnxruntime and tokenizers only); its manifest and answers."""
    import zipfile

    from app.services.projects.bundles import export_bundle
    from tests.core.bundle.test_standalone import run_predict_py

    export_bundle(serving_state.live, live(serving_state, project), path, **options)
    manifest = json.loads(zipfile.ZipFile(path).read("manifest.json"))
    return manifest, run_predict_py(path, texts, tmp)


def test_a_bundle_answers_exactly_as_the_app_serving_its_version_fp32_and_int8(
    serving_state, trained, tmp_path
):
    """Issue 66 item 5: an int8 bundle queried fp32 pool vectors and calibrated its own
    thresholds (its own fold ids: 0.6672 against the app's 0.6681 on BANKING77), so 991 and
    994 of 1,000 answers agreed with the app. A bundle is now the pool the app serves: the
    version's own int8 copy, the pool's vectors and thresholds; its predict.py, without the
    app, gives every question the app's top intent and out-of-scope flag, int8 and fp32 (the
    1,000 BANKING77 questions: ``python -m bench.bundle_parity``)."""
    from tests.app.test_bundles_service import IN_SCOPE, OUT_OF_SCOPE

    pid, mv = _state(serving_state, trained)
    with serving_state.db.session() as s:
        tests = [u.text for u in list_utterances(s, pid, split="test")]
    texts = IN_SCOPE + OUT_OF_SCOPE + tests
    assert len(texts) >= 80

    def decided(rows):
        return [(r["top"], r["oos"], r["labels"]) for r in rows]

    pool = serving_state.live.settled(pid)
    assert isinstance(pool.encoder, OnnxEncoder)  # the app serves the version's int8 copy
    app_int8 = predict_svc.predict(serving_state.live, live(serving_state, trained), texts)
    manifest, alone = _bundle_answers(
        serving_state, trained, tmp_path / "i8.zip", texts, tmp_path, int8=True
    )
    assert manifest["app_served"] == {
        "precision": "int8",
        "model_version": mv.id,
        "this_bundle": True,
    }
    assert manifest["thresholds"] == pool.predictor.thresholds  # the very thresholds
    folder = tmp_path / "unzipped-i8"
    _, _, _, vectors = pool.index.examples()
    np.testing.assert_array_equal(np.load(folder / "vectors.npy"), vectors)  # the int8 pool
    # the graph the app serves, its weights shared with the base's copy put back (issue 71 item 4)
    from core.bundle.onnx_shared import model_bytes

    served = pool.encoder.folder
    served_graph = model_bytes(served) or (served / "model.int8.onnx").read_bytes()
    assert (folder / "onnx" / "model.int8.onnx").read_bytes() == served_graph
    assert decided(alone) == decided(app_int8)
    assert sum(r["oos"] for r in app_int8) >= 5  # the out-of-scope flag is exercised

    project_svc.set_settings(serving_state.db, live(serving_state, trained), {"serve_int8": "off"})
    try:
        assert isinstance(serving_state.live.settled(pid).encoder, Encoder)
        app_fp32 = predict_svc.predict(serving_state.live, live(serving_state, trained), texts)
        manifest, alone = _bundle_answers(
            serving_state, trained, tmp_path / "f.zip", texts, tmp_path
        )
        assert manifest["app_served"]["precision"] == "fp32" and manifest["precision"] == "fp32"
        assert manifest["thresholds"] == serving_state.live.pool(pid).predictor.thresholds
        assert decided(alone) == decided(app_fp32)
        # an int8 bundle while the app serves fp32: what the app serves with int8 on
        manifest, alone = _bundle_answers(
            serving_state, trained, tmp_path / "i8b.zip", texts, tmp_path, int8=True
        )
        assert manifest["app_served"]["this_bundle"] is False
        assert decided(alone) == decided(app_int8)
    finally:
        project_svc.set_settings(
            serving_state.db, live(serving_state, trained), {"serve_int8": "on"}
        )
        serving_state.live.settled(pid)  # the int8 pool again, before the next test reads it


def test_a_missing_or_failed_int8_copy_serves_fp32(serving_state, trained, tmp_path):
    pid, mv = _state(serving_state, trained)
    shutil.rmtree(
        int8_folder(serving_state.artifacts, mv.artifact_path, VersionMetrics.from_dict(mv.metrics))
    )
    # a running pool keeps the int8 encoder it loaded (in memory, unchanged); the next pool built
    # for the version (a restart, another process) finds no copy and serves fp32
    assert isinstance(serving_state.live.pool(pid).encoder, OnnxEncoder)
    serving_state.live.forget_pool(pid)
    assert isinstance(serving_state.live.pool(pid).encoder, Encoder)

    items = list(serving_state.live.pool(pid).items.values())
    data = EvalData([t for t, _ in items], [lab for _, lab in items], [], [])
    fp32 = serving_state.models.encoder_for_version(mv)
    failed = export_version_int8(fp32, data, tmp_path / "onnx", min_agreement=1.01)
    assert failed["passed"] is False and "agreement" in failed["reason"]
    assert not (tmp_path / "onnx").exists()
    with serving_state.db.write() as s:  # the version as a retrain whose parity failed records it
        row = s.get(ModelVersion, mv.id)
        row.metrics = {**row.metrics, "int8": failed}
    serving_state.live.forget_pool(pid)
    assert isinstance(serving_state.live.pool(pid).encoder, Encoder)
    assert "int8 not used" in version_svc.serving(serving_state.db, live(serving_state, trained))


def test_parity_without_a_test_split_holds_out_a_fifth_of_the_pool():
    data = EvalData([f"t{i}" for i in range(10)], [("a",)] * 10, [], [])
    pool, labels, queries = parity_split(data)
    assert queries == ["t0", "t5"] and len(pool) == len(labels) == 8
    assert not set(queries) & set(pool)


def test_the_parity_check_compares_a_sample_and_leaves_the_int8_pool_vectors_cached(
    serving_state, trained, tmp_path
):
    from core.encoding.cache import EmbeddingCache

    pid, mv = _state(serving_state, trained)
    items = list(serving_state.live.pool(pid).items.values())
    texts, labels = [t for t, _ in items], [lab for _, lab in items]
    data = EvalData(texts, labels, texts[:30], labels[:30])
    cache = EmbeddingCache(tmp_path / "cache")
    info = export_version_int8(
        serving_state.models.encoder_for_version(mv),
        data,
        tmp_path / "onnx",
        cached=cache.encode,
        limit=20,
    )
    assert info["passed"] is True and info["n"] == 20  # 20 of the 30 questions
    # the live pool serving this copy finds its vectors of the pool: nothing encoded again
    assert cache.missing(OnnxEncoder(tmp_path / "onnx"), texts) == []


def test_after_a_label_change_the_live_recalibration_still_applies_the_correction(served):
    """The correction keeps holding as the pool grows: a new label recalibrates the pool (in the
    background), the examples the version trained on are still corrected and the new one is
    scored as it is; the project's ``quick`` drops the correction at once, ``auto`` restores it
    (the version has one)."""
    from app.services.labelling import data as data_svc
    from app.services.projects.bundles import export_bundle
    from core.bundle import load
    from core.evaluation.oos import calibrate_predictor

    server = served[2]
    p = live(server, DEMO)
    before = server.live.pool(p.id).calibration
    added = data_svc.add_utterance(server.db, p, "my parcel never came, where is it", "track_order")
    pool = server.live.pool(p.id)
    deadline = time.monotonic() + 60
    while pool.calibration.n_scores != before.n_scores + 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    after = pool.calibration
    assert after.n_scores == before.n_scores + 1
    assert after.corrected_by == before.corrected_by and after.n_corrected == before.n_corrected
    with pool.lock:  # the same rule by hand, on the pool as it is now
        every, _, _, _ = pool.index.examples()
        copy, items = pool.predictor.fold(every), dict(pool.items)
    correction = pool.correction.for_items(items)
    by_hand = calibrate_predictor(copy, target_recall=0.95, correction=correction)
    assert pool.predictor.thresholds["default"] == pytest.approx(by_hand.default)
    own = calibrate_predictor(copy, target_recall=0.95)
    assert after.uncorrected == pytest.approx(own.default) != pytest.approx(by_hand.default)

    # a bundle of the version carries the corrected thresholds too
    out = export_bundle(server.live, p, server.settings.data_dir / "demo.zip")
    assert out["model_version"] == p.active_version_id
    with load(server.settings.data_dir / "demo.zip") as bundle:
        assert bundle.manifest["out_of_scope"]["corrected_by"] == after.corrected_by

    project_svc.set_settings(server.db, p, {"oos_calibration": "quick"})
    pool = server.live.pool(p.id)
    assert pool.calibration.corrected_by is None
    assert pool.predictor.thresholds["default"] == pytest.approx(own.default)
    assert "unused while this is quick" in calibration_line(server.live, live(server, DEMO))
    project_svc.set_settings(server.db, p, {"oos_calibration": "auto"})
    assert server.live.pool(p.id).calibration.corrected_by == after.corrected_by
    # another version serving drops it (the frozen base here), its own version restores it
    version = p.active_version_id
    version_svc.activate(server.factories, p, None)
    assert server.live.pool(p.id).calibration.corrected_by is None
    version_svc.activate(server.factories, p, version)
    assert server.live.pool(p.id).calibration.corrected_by == after.corrected_by
    data_svc.delete_utterance(server.db, live(server, DEMO), added["id"])
