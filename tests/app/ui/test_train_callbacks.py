"""The Train tab's callbacks are plain functions of the app context and widget values."""

from __future__ import annotations

from app.ui.train import export, retrain, versions


def test_nothing_starts_without_a_project():
    msg, job_id, timer = retrain.start(None, None, "fast", "", "local")  # type: ignore[arg-type]
    assert "Pick a project first." in msg and job_id is None and timer["active"] is False


def test_bad_settings_are_refused_before_anything_is_queued(ctx, demo):
    method = next(iter(retrain.train_svc.METHOD_CHOICES))
    msg, job_id, _ = retrain.start(ctx, demo, method, "epochs=-3", "local")
    assert "⚠" in msg and job_id is None
    assert retrain.poll(ctx, demo, None)[0] == retrain.progress_html(None)


def test_the_history_of_a_fresh_project_offers_only_the_frozen_encoder(ctx, demo):
    frame, pick, *_ = versions.load_history(ctx, demo)
    assert frame.empty and list(frame.columns) == versions.HISTORY_COLUMNS
    assert pick["choices"] == [versions.BASE_CHOICE] and pick["value"] == versions.BASE_CHOICE
    table, msg = versions.compare(ctx, demo, versions.BASE_CHOICE, versions.BASE_CHOICE)
    assert "Pick a trained version" in msg and table["visible"] is False


def test_export_callbacks_ask_for_what_they_need(ctx):
    assert "Pick a project first." in export.make_report(ctx, None)[1]
    assert "Choose a bundle .zip first." in export.open_bundle(ctx, None)[1]


def test_the_queued_line_clears_once_the_job_has_ended(ctx, demo):
    from app.ui.train import tick

    method = next(iter(retrain.train_svc.METHOD_CHOICES))
    msg, job_id, _ = retrain.start(ctx, demo, method, "", "local")
    assert "queued" in msg
    running = tick(ctx, demo, job_id, msg)
    assert running[2]["active"] is True and running[-1] == {"__type__": "update"}
    retrain.stop(ctx, job_id, demo)  # a queued job is cancelled at once
    ended = tick(ctx, demo, job_id, msg)
    assert ended[2]["active"] is False and ended[-1] == ""
    assert "cancelled" in ended[0]
    other = "✓ Activated v1."  # a message that is not the job's stays
    assert tick(ctx, demo, job_id, other)[-1] == {"__type__": "update"}
