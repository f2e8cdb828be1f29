"""``train``, ``predict``, ``settings``, ``bundle`` and ``report``: models and what they predict."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from app.access.actions import BUNDLE, READ, SAVE_SETTINGS, TRAIN
from app.cli.common import CliError, acts, context, data_output, project, version_arg, whole
from app.limits import MAX_K
from core.method_names import METHOD_LINES


def _parse_config(args: argparse.Namespace) -> dict[str, Any]:
    from app.services.training.retrain_jobs import parse_settings

    try:
        return {"method": args.method, **parse_settings(args.set or [])}
    except ValueError as exc:
        raise CliError(str(exc)) from exc


@acts(TRAIN)
def cmd_train(args: argparse.Namespace) -> int:
    import threading

    from app import worker
    from app.services.training import retrain_jobs
    from app.services.training.retrain_warm import warm_up_worker

    serving_state = context(args)
    if args.queue:
        serving_state.training.enqueue = worker.queue_for(serving_state.settings)
    p = project(serving_state, args.project, TRAIN)
    try:
        view, created = retrain_jobs.request_retrain(
            serving_state.training, p, _parse_config(args), enqueue=args.queue
        )
    except retrain_jobs.QueueUnavailable as exc:
        raise CliError(str(exc)) from exc
    if not created:
        print(f"Job #{view.id} is already {view.status} for this project; following it.")
    print(retrain_jobs.method_line(str(view.config.get("method", ""))), flush=True)
    runner = warming = None
    # the job's end, never waited for by a join: one Ctrl+C interrupts marks the thread stopped
    ended = threading.Event()  # (Python 3.11): the process exited under torch, exit -6
    if not args.queue and created:
        # the job runs here: its encoder loads (and a GPU starts, its kernels warmed) while the
        # job claims its row and snapshots the data
        budget = serving_state.models.budget
        steps = budget.warm_up_steps if budget.device == "cuda" else 0
        warming = warm_up_worker(
            serving_state.live,
            budget,
            device=serving_state.settings.device,
            int8=serving_state.settings.int8,
            steps=steps,
            bases=[p.base_encoder],
        )
        # nobody waits on the app between its checkpoints: what will serve is measured once
        job_id = view.id

        def run_job() -> None:
            try:
                worker.execute_job(serving_state, job_id, anytime=False)
            finally:
                ended.set()

        runner = threading.Thread(target=run_job, name="train-job", daemon=True)
        runner.start()
    last = ""
    try:
        while True:
            view = retrain_jobs.job(serving_state.training, view.id)
            line = f"[{view.status}] {retrain_jobs.describe(view)}"
            if line != last:
                print(line, flush=True)
                last = line
            if not view.active:
                break
            ended.wait(1.0)  # a job run here: wakes as soon as it ends, not at the next second
    except KeyboardInterrupt:
        view = retrain_jobs.cancel(serving_state.db, view.id)
        print(f"[{view.status}] {retrain_jobs.describe(view)}", flush=True)
    if runner is not None:  # a cancelled job's runner stops at its next poll: let it (torch
        ended.wait(60)  # cut off at exit aborts the process)
        view = retrain_jobs.job(serving_state.training, view.id)
    if warming is not None:  # the same for a warm-up a job that failed early did not wait for
        warming.join(60)
    if view.model_version_id:
        from app.services.models.versions import metrics
        from core.evaluation.version_metrics import VersionMetrics

        m = metrics(
            serving_state.db, project(serving_state, args.project, READ), view.model_version_id
        )
        base = m.base or VersionMetrics()
        print(
            json.dumps(
                {
                    "version": view.model_version_id,
                    "method": view.config.get("method"),
                    "split": m.split,
                    "accuracy": m.accuracy,
                    "macro_f1": m.macro_f1,
                    "frozen_accuracy": base.accuracy,
                    "silhouette": m.silhouette,
                    "frozen_silhouette": base.silhouette,
                    "gate": m.gate or None,
                    "train_seconds": m.train_seconds,
                },
                indent=2,
            )
        )
    return 0 if view.status == "succeeded" else 1


def _read_texts(args: argparse.Namespace) -> list[str]:
    texts = list(args.texts)
    if args.input:
        src = sys.stdin if args.input == "-" else open(args.input, encoding="utf-8")  # noqa: SIM115
        with src:
            texts += [line.rstrip("\n") for line in src if line.strip()]
    if not texts:
        raise CliError("Give utterances as arguments or with --input FILE (one per line).")
    return texts


def _decision(r: dict[str, Any]) -> str:
    """The decision in words: the intent(s), or out of scope with the threshold it missed."""
    if r.get("oos"):
        missed = f" < threshold {r['threshold']:.3f}" if "threshold" in r else ""
        return f"no intent: out of scope (closest {r['top']}{missed})"
    text = "|".join(r["labels"]) or str(r["top"])
    return text + (" (ambiguous)" if r.get("ambiguous") else "")


@acts(SAVE_SETTINGS)
def cmd_settings(args: argparse.Namespace) -> int:
    """Show a project's settings and what each does now, or with ``--set name=value``
    (repeatable) change some of them (every value is checked first: one bad value changes
    nothing)."""
    from app.services.projects import settings

    serving_state = context(args)
    changes: dict[str, str] = {}
    for pair in args.set or []:
        name, sep, value = pair.partition("=")
        if not sep:
            raise ValueError(f"--set takes name=value (e.g. anchor_weight=1), not {pair!r}.")
        changes[name.strip()] = value
    if changes:
        view, message = settings.change(
            serving_state.live, project(serving_state, args.project, SAVE_SETTINGS), changes
        )
    else:
        view, message = (
            settings.view(serving_state.live, project(serving_state, args.project, READ)),
            "",
        )
    if args.format == "json":
        print(json.dumps(view.to_dict(), ensure_ascii=False))
        return 0
    if message:
        print(message)
    print("\n".join(view.lines()))
    return 0


class _SettingsHelp(argparse.Action):
    """``settings --help``: the usage, then every setting and what it is, read from the settings
    themselves when asked (the command line's other help never loads them)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from app.services.projects.settings import described

        parser.formatter_class = argparse.RawDescriptionHelpFormatter
        parser.epilog = "settings (NAME for --set NAME=VALUE):\n" + "\n".join(described())
        parser.print_help()
        parser.exit()


def _write_predictions(results: list[dict[str, Any]], args: argparse.Namespace) -> None:
    if args.format == "jsonl":
        for r in results:
            print(json.dumps(r, ensure_ascii=False))
        return
    if args.format == "csv":
        from app.formats import csv_line
        from app.formats import spreadsheet_safe as safe

        out = data_output()  # exact: a control character stays in its quoted cell
        head = ["text", "intent", "score", "margin", "nearest_example", "similarity", "oos"]
        out.write(csv_line(head))
        for r in results:
            best = r["intents"][0]["best"] if r["intents"] else {"text": "", "similarity": ""}
            cells = [
                safe(r["text"]),
                safe("|".join(r["labels"])),  # the decision: empty when out of scope
                r["score"],
                r["margin"],
                safe(best["text"]),
                best["similarity"],
                int(bool(r.get("oos"))),
            ]
            out.write(csv_line(str(c) for c in cells))  # a CR in a text is quoted
        return
    for r in results:
        print(f"{r['text']}\n  → {_decision(r)} ({r['score']:.3f}, margin {r['margin']:.3f})")
        for n in r["neighbours"][: args.show]:
            print(f"     {n['similarity']:.3f}  [{'|'.join(n['labels'])}] {n['text']}")


@acts(READ)
def cmd_predict(args: argparse.Namespace) -> int:
    texts = _read_texts(args)
    if args.bundle:
        from core.bundle import load

        if args.context:
            raise CliError("A bundle predicts from the utterance alone: --context needs --project.")
        predictor = load(args.bundle)
        results = predictor.predict(texts, k=args.k)
    else:
        if not args.project:
            raise CliError("Give --project NAME (or --bundle FILE).")
        from app.services.models.predict import predict

        turns = [args.context] * len(texts) if args.context else None
        serving_state = context(args)
        p = project(serving_state, args.project, READ)
        from app.serving.int8 import builds_int8

        if p.active_version_id is None and builds_int8(
            serving_state.settings.int8, serving_state.models.budget
        ):
            from app.services.training.base_int8 import ensure_base_int8

            # a project never retrained serves its base encoder's int8 copy, built once (then
            # no torch): the same path as a retrained project's (issue 63 item 5)
            ensure_base_int8(serving_state.live, p)
        # a multi-label pool whose head is neither in its version nor kept fits one: predict
        # with it, not with the k-NN fallback (issue 45 row 6); kept for the next start
        serving_state.live.pool(p.id)
        serving_state.live.heads.settle(600)
        results = predict(serving_state.live, p, texts, k=args.k, contexts=turns)
    _write_predictions(results, args)
    return 0


@acts(BUNDLE)
def cmd_bundle_export(args: argparse.Namespace) -> int:
    from app.services.projects.bundles import export_bundle

    version = args.version  # a number, "base" or None (the active one): version_arg
    serving_state = context(args)
    p = project(serving_state, args.project, BUNDLE)
    info = export_bundle(serving_state.live, p, args.output, version=version, int8=args.int8)
    print(json.dumps(info, indent=2))
    return 0


@acts(BUNDLE)
def cmd_bundle_import(args: argparse.Namespace) -> int:
    from app.services.projects.bundles import import_bundle

    name = import_bundle(context(args).factories, args.file, args.name)
    print(f"Imported the bundle as read-only project {name!r}.")
    return 0


@acts(READ)
def cmd_report(args: argparse.Namespace) -> int:
    from app.services.projects.reports import build_report

    out = Path(args.output) if args.output else None
    if out is not None and out.suffix.lower() != ".html":
        raise CliError("The report is an .html file: give a path ending in .html.")
    serving_state = context(args)
    print(
        build_report(
            serving_state, project(serving_state, args.project, READ), out, static=args.static
        )
    )
    return 0


def add_parser(sub: Any) -> None:
    """This module's commands on the ``intent-studio`` parser (``sub``: its subparsers)."""
    p = sub.add_parser("train", help="retrain a project's encoder and print progress and metrics")
    p.add_argument("--project", required=True)
    p.add_argument(
        "--method",
        default="convfit",
        metavar="{convfit,lora}",
        help=f"convfit (the default; fast, its older name, still works) = "
        f"{METHOD_LINES['convfit']}. lora = {METHOD_LINES['lora']}.",
    )
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="a TrainConfig field, e.g. --set epochs=2",
    )
    p.add_argument(
        "--queue", action="store_true", help="hand the job to the worker instead of training here"
    )
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("predict", help="classify utterances with a project's pool or a bundle")
    p.add_argument("texts", nargs="*")
    p.add_argument("--project")
    p.add_argument("--bundle", help="a model bundle .zip (runs without the app's database)")
    p.add_argument("--input", help="file with one utterance per line ('-' = stdin)")
    p.add_argument(
        "-k",
        type=whole("number of examples per intent (k)", 1, MAX_K),
        default=1,
        help="examples per intent that make its score",
    )
    p.add_argument(
        "--context",
        help="the turn before the utterances (e.g. the bot's question); used by a project that "
        "encodes context (intent-studio context)",
    )
    p.add_argument("--format", choices=["text", "jsonl", "csv"], default="text")
    p.add_argument(
        "--show",
        type=whole("number of neighbours", 0, MAX_K),
        default=3,
        help="neighbours shown per utterance (text format)",
    )
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser(
        "settings",
        help="show a project's settings and what each does now, or change them (the automatic "
        "retrain's switch among them: auto_retrain=off)",
        add_help=False,
    )
    p.add_argument(
        "-h",
        "--help",
        action=_SettingsHelp,
        nargs=0,
        help="show this help, every setting, and exit",
    )
    p.add_argument("--project", required=True)
    p.add_argument(
        "--set",
        action="append",
        metavar="NAME=VALUE",
        help="e.g. oos_target_recall=0.95 (or off), anchor_weight=1 (or off), "
        "encode_context=on, serve_int8=off, auto_retrain=off, auto_retrain_after=50; "
        "repeatable (every setting: below)",
    )
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(func=cmd_settings)

    p = sub.add_parser("bundle", help="export a model bundle, or open one as a read-only project")
    bundle_sub = p.add_subparsers(dest="bundle_command", required=True)
    b = bundle_sub.add_parser("export", help="write a model version as a bundle .zip")
    b.add_argument("--project", required=True)
    b.add_argument(
        "--version",
        type=version_arg,
        help="model version id, or 'base' (default: the active one)",
    )
    b.add_argument("-o", "--output", required=True, help="the .zip to write")
    b.add_argument(
        "--int8",
        action="store_true",
        help="carry the encoder as int8 ONNX instead of fp32 (4x smaller; refused if it "
        "disagrees with fp32 on >1%% of the test split; cannot be opened as a project)",
    )
    b.set_defaults(func=cmd_bundle_export)
    b = bundle_sub.add_parser("import", help="open a bundle as a new read-only project")
    b.add_argument("file")
    b.add_argument("--name", help="project name (default: the bundle's project + ' (bundle)')")
    b.set_defaults(func=cmd_bundle_import)

    p = sub.add_parser("report", help="write the stakeholder report (self-contained HTML)")
    p.add_argument("--project", required=True)
    p.add_argument(
        "-o",
        "--output",
        help="the .html to write (default: a file in <data-dir>/downloads/, removed after a day)",
    )
    p.add_argument(
        "--static",
        action="store_true",
        help="no script: tables and bars instead of interactive charts, no maps (prints well)",
    )
    p.set_defaults(func=cmd_report)
