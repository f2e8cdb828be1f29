"""The compute budget (issue 55 item 4): every device-dependent choice is a function of the
device, tested here for a GPU and a CPU on a machine without a GPU: what serves, whether a
retrain builds an int8 copy, a new project's encoder, the worker's warm-up, the out-of-scope
calibration a retrain runs."""

from __future__ import annotations

import dataclasses

import pytest

from app.project_settings import ProjectSettings
from app.serving.compute import (
    budget_for,
    device_kind,
    new_project_encoder,
    process_device,
)
from app.serving.int8 import served_metrics, serves_int8, serving_line
from core.evaluation.version_metrics import VersionMetrics

# A version trained on a CPU worker whose int8 copy passed: its headline is the copy's.
TRAINED_ON_A_CPU = VersionMetrics(
    accuracy=0.86,
    encoder="int8",
    int8={"passed": True, "reason": "top-1 agreement 99.80% on 1000 utterances"},
    fp32=VersionMetrics(accuracy=0.87, encoder="fp32"),
)


@pytest.mark.fast
def test_a_gpu_serves_fp32_builds_no_int8_copy_and_affords_the_stronger_encoder():
    gpu, cpu = budget_for("cuda"), budget_for("cpu")
    assert (gpu.device, gpu.int8_copy, gpu.serves_int8) == ("cuda", False, False)
    assert (cpu.device, cpu.int8_copy, cpu.serves_int8) == ("cpu", True, True)
    assert (gpu.new_project_encoder, cpu.new_project_encoder) == ("mpnet", "minilm")
    assert gpu.warm_up_steps > cpu.warm_up_steps > 0
    assert (gpu.serving_precision, cpu.serving_precision) == ("fp32", "fp32, then int8")
    assert budget_for("cuda:1") == gpu and budget_for("mps") == cpu
    assert [device_kind(d) for d in ("CUDA:0", "cpu", "")] == ["cuda", "cpu", "cpu"]
    for budget in (gpu, cpu):  # every choice says why, in words
        assert set(budget.reasons) == {"serving", "encoder", "calibration"}


@pytest.mark.fast
def test_the_first_pass_and_the_cores_are_the_devices_choice():
    """Issue 63: how long a retrain's first pass may train before its first version serves, and
    whether the worker leaves the app a core, are the budget's: a GPU affords eight times the
    pairs and computes beside no one; a config that sets its own first pass keeps it."""
    from core.training import TrainConfig

    gpu, cpu = budget_for("cuda"), budget_for("cpu")
    assert (gpu.first_pass(TrainConfig()).first_pass, cpu.first_pass(TrainConfig()).first_pass) == (
        256,
        32,
    )
    assert cpu.first_pass(TrainConfig(batch_size=64)).first_pass == 16
    assert cpu.first_pass(TrainConfig(first_pass=0)).first_pass == 0  # every pass on one schedule
    assert (gpu.shares_cores, cpu.shares_cores) == (False, True)


def test_the_pause_before_an_automatic_retrain_is_the_devices():
    """Issue 63's GPU row (auto retrain after 20 labels <= 10 s): a CPU waits 6 s without a
    label, a key or a card (a retrain takes both cores for a while), a GPU 3 s (seconds of
    training, no key slowed), and the settings line says the pause of the device it runs on."""
    from datetime import datetime, timedelta

    from app.perimeter.in_use import WORK_EVERY_S
    from app.services.training.auto_retrain import AutoState, due

    gpu, cpu = budget_for("cuda"), budget_for("cpu")
    t = datetime(2026, 11, 28, 12, 0, 0)
    later = t + timedelta(seconds=4)
    assert (
        due(ProjectSettings(), 20, t, later, gpu.auto_quiet_s),
        due(ProjectSettings(), 20, t, later, cpu.auto_quiet_s),
    ) == (True, False)
    assert gpu.auto_poll_s < cpu.auto_poll_s
    assert "or waited for a card for 3 s" in AutoState(True, 20, 4, False, gpu.auto_quiet_s).words
    # the Label tab's work reaches the watcher before the shortest spell could pass
    assert min(gpu.auto_quiet_s, cpu.auto_quiet_s) > WORK_EVERY_S


@pytest.mark.fast
def test_a_gpu_calibrates_out_of_scope_on_held_out_encoders_and_a_cpu_the_quick_way():
    """The held-out calibration (about 4x a retrain's training) is the default where it takes
    seconds; a project's setting overrides the device either way; it is planned only where it
    has something to calibrate."""
    from app.services.training.retrain_calibrate import PENDING, calibration_plan
    from app.services.training.retrain_state import Snapshot
    from core.evaluation import EvalData
    from core.training import trainable

    gpu, cpu = budget_for("cuda"), budget_for("cpu")
    assert (gpu.calibration("auto"), cpu.calibration("auto")) == ("held-out", "quick")
    for budget in (gpu, cpu):
        assert budget.calibration("held-out") == "held-out"
        assert budget.calibration("quick") == "quick"
    with pytest.raises(ValueError, match="Unknown calibration 'slow'"):
        cpu.calibration("slow")
    assert "about 4x a retrain's training here" in cpu.reasons["calibration"]

    rows = [
        ("where is my card", "card"),
        ("card not here", "card"),
        ("hi", "greet"),
        ("hey", "greet"),
    ]
    data = EvalData([t for t, _ in rows], [(y,) for _, y in rows], [], [])

    def snapshot(settings, labels=None):
        labels = labels or data.train_labels
        return Snapshot(
            1,
            1,
            "",
            "minilm",
            ProjectSettings.from_dict(settings),
            False,
            None,
            data,
            trainable(data.train_texts, labels),
            False,
            0,
        )

    assert calibration_plan(gpu, snapshot({})) == {
        "method": "held-out",
        "pending": True,
        "reason": PENDING,
    }
    quick = calibration_plan(cpu, snapshot({}))
    assert quick == {"method": "quick", "reason": cpu.reasons["calibration"]}
    assert calibration_plan(cpu, snapshot({"oos_calibration": "held-out"}))["pending"]
    chose = calibration_plan(gpu, snapshot({"oos_calibration": "quick"}))
    assert chose == {
        "method": "quick",
        "reason": "the project chose the quick calibration (Data → Project settings)",
    }
    multi = calibration_plan(gpu, dataclasses.replace(snapshot({}), multi=True))
    assert multi["method"] == "quick" and "multi-label" in multi["reason"]
    off = calibration_plan(gpu, snapshot({"oos_target_recall": None}))
    assert off["method"] == "quick" and "detection is off" in off["reason"]


@pytest.mark.fast
def test_recorded_is_served_on_both_devices():
    """The same version shows the int8 copy's numbers where the copy serves (a CPU) and the
    fp32 encoder's where the GPU serves it."""
    on = ProjectSettings(serve_int8=True)
    cpu, gpu = budget_for("cpu"), budget_for("cuda")
    assert serves_int8(TRAINED_ON_A_CPU, on, cpu) and not serves_int8(TRAINED_ON_A_CPU, on, gpu)
    assert served_metrics(TRAINED_ON_A_CPU, on, cpu).accuracy == 0.86
    assert served_metrics(TRAINED_ON_A_CPU, on, gpu).accuracy == 0.87
    assert served_metrics(TRAINED_ON_A_CPU, on, gpu).measured_with == "fp32"
    assert "int8 ONNX" in serving_line(TRAINED_ON_A_CPU, on, cpu)
    assert "on the GPU" in serving_line(TRAINED_ON_A_CPU, on, gpu)
    building = VersionMetrics(accuracy=0.87, int8={"passed": False, "pending": True})
    assert "being built" in serving_line(building, on, cpu)


@pytest.mark.fast
def test_the_device_is_asked_once_and_a_configured_one_wins(monkeypatch):
    monkeypatch.setenv("INTENT_STUDIO_DEVICE", "cuda")
    process_device.cache_clear()
    try:
        assert process_device() == "cuda" and process_device("cpu") == "cpu"
    finally:
        process_device.cache_clear()


def test_a_new_project_starts_on_the_encoder_its_device_affords(serving_state, monkeypatch):
    """On a GPU a new project starts on mpnet when it is installed, else on MiniLM (said in the
    log); on a CPU on MiniLM. Imports create projects the same way."""
    from app.services.projects import projects as project_svc
    from core.encoding import registry
    from storage.projects import get_project

    assert new_project_encoder(budget_for("cpu")) == "minilm"
    installed = registry.installed("mpnet")
    assert new_project_encoder(budget_for("cuda")) == ("mpnet" if installed else "minilm")

    # the process's own budget decides when none is named (this machine: a CPU)
    project_svc.new_project(serving_state.db, "fresh")
    with serving_state.db.session() as s:
        assert get_project(s, "fresh").base_encoder == "minilm"
    if not installed:  # a GPU whose mpnet is installed: the registry finds a folder
        monkeypatch.setitem(
            registry._REGISTRY,
            "mpnet",
            dataclasses.replace(registry.registry()["minilm"], name="mpnet"),
        )
    assert new_project_encoder(budget_for("cuda")) == "mpnet"


def test_the_train_tab_says_which_encoder_serves_why_and_what_switching_costs(
    serving_state, monkeypatch
):
    """One project setting switches the base encoder; the line says so, with this device's
    reason for its default and the cost of the other encoder here."""
    from app.services.models import encoders
    from app.services.projects import settings as settings_svc
    from core.encoding import registry
    from tests.handles import live
    from tests.samples import make_tiny

    make_tiny(serving_state)
    tiny = live(serving_state, "tiny")
    view = encoders.encoder_view(serving_state.db, tiny, budget_for("cpu"))
    assert view.name == "minilm" and "Serving: the frozen minilm encoder" in view.serving
    assert view.why.startswith("MiniLM (384-d) is the default on a CPU")
    assert "Switching is one project setting" in view.switch
    on_gpu = encoders.encoder_view(serving_state.db, tiny, budget_for("cuda"))
    assert "on this GPU a new project starts on mpnet" in on_gpu.why
    assert "mpnet" in encoders.switch_cost("minilm", budget_for("cpu"), 23.0)

    # a second encoder installed here (MiniLM's folder under another name): switching is one
    # setting, said and stored; the other settings are untouched
    monkeypatch.setitem(
        registry._REGISTRY,
        "minilm-b",
        dataclasses.replace(registry.registry()["minilm"], name="minilm-b"),
    )
    after, message = settings_svc.change(serving_state.live, tiny, {"base_encoder": "minilm-b"})
    assert message == "Changed base_encoder minilm → minilm-b."
    assert after.base_encoder == "minilm-b" and tiny.base_encoder == "minilm-b"
    assert "This project chose it" in after.effects["base_encoder"]
    assert "base_encoder = minilm-b" in after.lines()
    with pytest.raises(ValueError, match="Unknown encoder"):
        settings_svc.change(
            serving_state.live, tiny, {"base_encoder": "bert-huge", "anchor_weight": "2"}
        )
    assert tiny.base_encoder == "minilm-b" and tiny.settings.anchor_weight == 1.0


def test_the_settings_line_says_which_calibration_runs_here_and_what_held_out_costs(serving_state):
    """The Data tab's Project settings line (and the CLI's) for ``oos_calibration``, as a
    function of the device: on a GPU auto is held-out and says what it buys; on a CPU auto is
    quick and says what held-out would cost here; a project's own choice is said as its own."""
    from app.services.models.calibration import calibration_line
    from app.services.projects import settings as settings_svc
    from tests.handles import live
    from tests.samples import make_tiny

    make_tiny(serving_state)
    tiny = live(serving_state, "tiny")
    on_gpu = calibration_line(serving_state.live, tiny, budget_for("cuda"))
    assert on_gpu.startswith("Auto: held-out on this GPU: after each retrain's version serves, 5")
    assert "about 4x a retrain's training on this GPU" in on_gpu
    assert on_gpu.endswith("Serving now: the pool's own scores.")
    on_cpu = calibration_line(serving_state.live, tiny, budget_for("cpu"))
    assert on_cpu.startswith("Auto: quick on this CPU (thresholds from the pool's own scores).")
    assert "Held-out would take about 4x a retrain's training on this CPU" in on_cpu
    settings_svc.change(serving_state.live, tiny, {"oos_calibration": "held-out"})
    chosen = calibration_line(serving_state.live, live(serving_state, "tiny"), budget_for("cpu"))
    assert chosen.startswith("Held-out: after each retrain's version serves") and "CPU" in chosen


@pytest.mark.slow
def test_a_retrain_under_a_gpus_budget_serves_fp32_then_calibrates_and_a_cancel_stops_that(
    tmp_path,
):
    """With int8 on for the deployment, a retrain under a GPU's budget (on this CPU) registers
    the version measured with the fp32 encoder that serves it, builds no int8 copy and says
    why; the job has no int8 phase. It then calibrates out of scope on held-out encoders (the
    GPU's default), after the version serves: a cancel there stops that phase only (its
    version counts), and the version keeps the quick thresholds, saying why."""
    from app import worker
    from app.config import load_settings
    from app.services.projects.projects import ensure_demo_project
    from app.services.training import retrain_jobs
    from app.services.training.retrain import run_retrain
    from app.services.training.retrain_int8 import NOT_ON_GPU
    from app.serving.state import ServingState
    from storage import jobs
    from storage.tables import ModelVersion
    from storage.versions import active_version
    from tests.handles import live
    from tests.samples import QUICK

    class Cancelling(worker.JobReporter):
        """The worker's reporter; a user cancels the job when its held-out calibration starts."""

        def log(self, line, *, phase=None) -> None:
            super().log(line, phase=phase)
            if phase == "calibrating":
                asked = retrain_jobs.cancel(self.training.db, self.job_id)
                assert asked.status == "running" and "keeps serving" in asked.message

    serving_state = ServingState.open(
        dataclasses.replace(load_settings(tmp_path / "data"), int8=True)
    )
    try:
        demo = live(serving_state, ensure_demo_project(serving_state.db))
        view, _ = retrain_jobs.request_retrain(serving_state.training, demo, QUICK, enqueue=False)
        with serving_state.db.write() as s:
            jobs.claim_job(s, view.id, pid=1)
        spec = retrain_jobs.RetrainSpec.from_job(view.config)
        reporter = Cancelling(serving_state.training, view.id)
        try:
            run = dataclasses.replace(
                worker.retrain_run(serving_state, view.id, reporter), budget=budget_for("cuda")
            )
            version, message = run_retrain(run, view.project_id, spec.encoder, spec.head)
        finally:
            reporter.close()
        with serving_state.db.session() as s:
            mv = s.get(ModelVersion, version)
            log = jobs.get_job(s, view.id).log
            served = active_version(s, view.project_id)
        assert mv.metrics["int8"] == {"passed": False, "reason": NOT_ON_GPU}
        assert mv.metrics["encoder"] == "fp32" and mv.metrics["device"] == "cuda"
        assert "Measured with the fp32 encoder that serves it on the GPU." in message
        assert "int8" not in log.lower().replace(NOT_ON_GPU, "")
        # the held-out calibration started after the version served, and the cancel stopped it
        assert served is not None and served.id == version
        assert "calibrating out of scope on 5 held-out encoders" in log
        assert "cancel asked: stopping the held-out calibration" in log
        calibration = mv.metrics["oos_calibration"]
        assert (
            calibration["method"] == "quick" and "calibration was stopped" in calibration["reason"]
        )
        assert "Out of scope: the held-out calibration was stopped (cancelled" in message
        assert serving_state.live.pool(view.project_id).calibration.corrected_by is None
        models = serving_state.artifacts.path(mv.artifact_path).parent
        assert [f.name for f in models.iterdir()] == [mv.artifact_path.rsplit("/", 1)[1]]
    finally:
        serving_state.close()
