"""The Train tab's callbacks are plain functions of the app context and widget values."""

from __future__ import annotations

from app.ui.train import export, retrain, versions


def test_nothing_starts_without_a_project():
    msg, job_id, timer = retrain.start(None, None, "fast", "", "local")  # type: ignore[arg-type]
    assert "Pick a project first." in msg and job_id is None and timer["active"] is False


def test_bad_settings_are_refused_before_anything_is_queued(serving_state, demo):
    method = next(iter(retrain.train_svc.METHOD_CHOICES))
    msg, job_id, _ = retrain.start(serving_state.training, demo, method, "epochs=-3", "local")
    assert "⚠" in msg and job_id is None
    assert retrain.poll(serving_state.training, demo, None)[0] == retrain.progress_html(None)


def test_the_history_of_a_fresh_project_offers_only_the_frozen_encoder(serving_state, demo):
    frame, pick, *_ = versions.load_history(serving_state.db, demo)
    assert frame.empty and list(frame.columns) == versions.HISTORY_COLUMNS
    assert pick["choices"] == [versions.BASE_CHOICE] and pick["value"] == versions.BASE_CHOICE
    table, msg = versions.compare(
        serving_state.db, demo, versions.BASE_CHOICE, versions.BASE_CHOICE
    )
    assert "Pick a trained version" in msg and table["visible"] is False


def test_export_callbacks_ask_for_what_they_need(serving_state):
    assert "Pick a project first." in export.make_report(serving_state, None)[1]
    assert "Choose a bundle .zip first." in export.open_bundle(serving_state, None)[1]


def test_the_queued_line_says_running_once_a_worker_has_taken_the_job_and_clears_at_its_end(
    serving_state, demo
):
    from app.ui.train import tick
    from storage import jobs

    method = next(iter(retrain.train_svc.METHOD_CHOICES))
    msg, job_id, _ = retrain.start(serving_state.training, demo, method, "", "local")
    assert "queued" in msg
    from app.services.training.retrain_jobs import job as stored_job

    assert (
        stored_job(serving_state.training, job_id).config["method"] == "convfit"
    )  # the default's name
    queued = tick(serving_state.training, serving_state.live, demo, job_id, msg)
    assert queued[2]["active"] is True and queued[-2] == {"__type__": "update"}
    assert queued[-1] == {"__type__": "update"}  # the automatic retrain's line: left as it was
    assert "waiting for a worker" in queued[0]
    with (
        serving_state.db.write() as s
    ):  # a worker takes it: the panel says what runs, "queued" goes
        jobs.claim_job(s, job_id, pid=1)
    running = tick(serving_state.training, serving_state.live, demo, job_id, msg)
    assert running[2]["active"] is True and "queued" not in running[0]
    assert "Preparing the data" in running[0]
    # the line keeps the job's number (what a user, or a test, reads the click's job from)
    assert running[-2] == f"✓ Job #{job_id} is running: its phase and time left are below."
    msg = running[-2]
    assert tick(serving_state.training, serving_state.live, demo, job_id, msg)[-2] == {
        "__type__": "update"
    }
    from app.ui.train import auto_switch

    watching = serving_state.live.auto_retrain
    serving_state.live.auto_retrain = True
    try:
        assert "a retrain is under way" in auto_switch.shown(serving_state.live, demo)[2]
    finally:
        serving_state.live.auto_retrain = watching
    retrain.stop(serving_state.training, job_id, demo)
    with serving_state.db.write() as s:
        jobs.finish_job(s, job_id, "cancelled", "cancelled; the active model is unchanged")
    ended = tick(serving_state.training, serving_state.live, demo, job_id, msg)
    assert ended[2]["active"] is False and ended[-2] == ""
    # the automatic retrain's line no longer says a retrain is under way (it did until the
    # project was picked again), in a deployment whose workers retrain by themselves
    serving_state.live.auto_retrain = True
    try:
        line = tick(serving_state.training, serving_state.live, demo, job_id, msg)[-1]
    finally:
        serving_state.live.auto_retrain = watching
    assert "since the last retrain" in line and "under way" not in line, line
    # One value per output the timer updates, running or not (a running job's tick was one
    # short: an error toast every second and a panel stuck at "queued · 0 %").
    bound = (
        len(retrain.poll(serving_state.training, demo, job_id))
        + len(versions.load_history(serving_state.db, demo))
        + 2
    )
    assert len(running) == len(ended) == bound
    assert "cancelled" in ended[0]
    other = "✓ Activated v1."  # a message that is not the job's stays
    assert tick(serving_state.training, serving_state.live, demo, job_id, other)[-2] == {
        "__type__": "update"
    }


def _job(**kw):
    from storage.job_view import JobView

    fields = {
        "id": 7, "project_id": 1, "status": "running", "phase": "training", "step": 0,
        "total": 0, "loss": None, "eta_seconds": None, "message": "", "log": "",
        "model_version_id": None, "config": {},
    }  # fmt: skip
    return JobView(**{**fields, **kw})


def test_the_progress_line_names_the_phase_its_count_and_the_jobs_time_left():
    first = _job(step=1, total=300, message="step 1 of 300 · loss 0.912", progress=0.01)
    assert "Training · step 1 of 300 · loss 0.912 · estimating…" in retrain.progress_html(first)
    training = _job(step=120, total=300, eta_seconds=130.0, message="step 120 of 300", progress=0.4)
    html = retrain.progress_html(training)
    assert (
        "width:40%" in html
        and "Training · step 120 of 300 · about 2 min to a first version" in html
    )
    evaluating = _job(
        phase="evaluating",
        step=120,
        total=1500,
        eta_seconds=9.6,
        message="3 encoders · 120 of 1,500 utterances",
        progress=0.8,
    )
    html = retrain.progress_html(evaluating)
    assert "width:80%" in html  # the whole job's share: not the phase's 8 %
    assert (
        "Evaluating · 3 encoders · 120 of 1,500 utterances · about 10 s to a first version" in html
    )
    int8 = _job(phase="int8", message="checking the int8 encoder's parity", eta_seconds=41.0)
    assert (
        "Checking its int8 copy (the new version answers meanwhile) · about 41 s to the end"
        in retrain.progress_html(int8)
    )
    counted = _job(phase="registering", message="registering the version", progress=1.0)
    assert "width:99%" in retrain.progress_html(counted)
    done = _job(status="succeeded", phase="registering", progress=0.99, message="v3: …")
    assert "width:100%" in retrain.progress_html(done) and "v3: …" in retrain.progress_html(done)
    queued = _job(status="queued", phase="", message="queued")
    assert "queued</b> · 0%<br>waiting for a worker to take it" in retrain.progress_html(queued)


def test_the_history_table_reads_in_words_and_megabytes():
    row = dict.fromkeys(versions.HISTORY_HEADERS, "x") | {"disk_bytes": 111_140_000, "version": 3}
    frame = versions.history_frame([row])
    assert list(frame.columns) == versions.HISTORY_COLUMNS
    assert "macro F1" in frame.columns and "disk_bytes" not in frame.columns
    assert frame.loc[0, "disk MB"] == 111.1
    assert len(versions.HISTORY_WIDTHS) == len(versions.HISTORY_COLUMNS)


def test_a_version_trained_as_fast_reads_as_convfit_stage_2(serving_state, demo):
    """Issue 55: ``fast`` was ConvFiT Stage 2's name. A version recorded under it keeps its
    record (REST says ``fast``) and the history names its method as the Train tab does."""
    from app.services.models import versions as version_svc
    from storage.versions import NewVersion, register_version

    with serving_state.db.write() as s:
        for method in ("fast", "convfit", "lora"):
            register_version(s, NewVersion(demo.id, None, method, "minilm", {}, {}, None, None, 1))
    rows = version_svc.history(serving_state.db, demo)
    assert [r["method"] for r in rows] == ["lora", "convfit", "fast"]
    assert [r["method_name"] for r in rows] == ["LoRA adapter", *["ConvFiT Stage 2"] * 2]
    frame = versions.load_history(serving_state.db, demo)[0]
    assert list(frame["method"]) == ["LoRA adapter", "ConvFiT Stage 2", "ConvFiT Stage 2"]


def test_the_picked_versions_note_is_said_under_the_table_not_in_a_column(serving_state, demo):
    """The note (how a version came to be and its gate's verdict) wrapped its column to eight
    lines and pushed the Versions section to 923 px at 1280x720: the table is one line a
    version, and the picked version's note is one line under it."""
    from storage.versions import NewVersion, register_version

    with serving_state.db.write() as s:
        for note in ("first pass, step 25 of 100. accuracy 0.876 vs 0.842: promoted.", ""):
            register_version(
                s, NewVersion(demo.id, None, "convfit", "minilm", {}, {}, None, None, 1, note)
            )
    assert "note" not in versions.HISTORY_COLUMNS
    said = versions.picked_note(serving_state.db, demo, "v1")
    assert said == "**v1:** first pass, step 25 of 100. accuracy 0.876 vs 0.842: promoted."
    assert versions.picked_note(serving_state.db, demo, "v2") == ""  # no note, no line
    assert versions.picked_note(serving_state.db, demo, versions.BASE_CHOICE) == ""


def test_a_retrain_is_followed_by_the_tick_at_once_not_only_by_the_timer(serving_state, demo):
    """A job that ends before the timer's first tick (a small project, a warm worker) left the
    "queued" line on screen and the history without its version: the Retrain click was followed
    by the job panel's refresh alone, and the timer, off once the job had ended, never ticked."""
    from app.ui.main import build_app

    fns = build_app(serving_state).fns.values()
    (started,) = [f for f in fns if f.api_name == "retrain"]
    (after,) = [f for f in fns if f.trigger_after == started._id]
    ids = {getattr(o, "elem_id", None) for o in after.outputs}
    assert {"train-message", "job-progress", "versions"} <= ids
    # the very refresh the Train tab's timer runs every second while a job is active
    ticks = [f for f in fns if f.targets and f.targets[0][1] == "tick"]
    (timer,) = [f for f in ticks if [o._id for o in f.outputs] == [o._id for o in after.outputs]]
    assert after.name == timer.name == "tick"
    # the method by its name, with one line on what it is; the line follows the choice (issue 55)
    (method,) = [f.inputs[1] for f in fns if f.api_name == "retrain"]
    assert (
        method.label == "Method" and method.value == "ConvFiT Stage 2 · in-batch ranking (default)"
    )
    (shown,) = [f for f in fns if f.name == "method_info"]
    assert [i._id for i in shown.inputs] == [method._id] and shown.outputs[0].value == (
        "ConvFiT Stage 2: contrastive task-tuning of the sentence encoder; in-batch ranking loss "
        "(it beat the paper's own pair recipe at 25-200 steps on BANKING77 and CLINC150)"
    )
    lora = next(c for c, _ in method.choices if c.startswith("LoRA adapter"))
    assert retrain.method_info(lora).startswith("LoRA adapter: the same ConvFiT Stage 2")


def test_the_retrain_section_says_which_encoder_serves_why_and_what_switching_costs(
    serving_state, demo
):
    """The same for the encoder and for the out-of-scope calibration a retrain runs here."""
    from app.ui.train import encoder_line

    line = encoder_line(serving_state.live, demo)
    assert line.startswith("**Encoder:** `minilm`, all-MiniLM-L6-v2")
    assert "Serving: the frozen minilm encoder (fp32)." in line
    assert "**Why:** MiniLM (384-d) is the default on a CPU" in line
    assert "**Switching:**" in line and "--project 'Demo: Acme support' --set base_encoder" in line
    headline, folded = line.split("<details>")
    assert "**Why:**" not in headline and folded.endswith("</details>")  # folded at 1280x720
    calibration = folded.split("  \n")[-1].removesuffix("\n\n</details>")
    assert calibration.startswith(
        "**Out-of-scope calibration:** Auto: quick on this CPU (thresholds from the pool's own "
        "scores). Held-out would take about 4x a retrain's training on this CPU after each "
        "retrain's version serves; on BANKING77"
    )
    assert calibration.endswith("Serving now: the pool's own scores.")
    assert encoder_line(serving_state.live, None) == ""
