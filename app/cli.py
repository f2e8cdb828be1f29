"""The ``intent-studio`` command. Subcommands import their heavy dependencies lazily, so ``--help``
is instant; each is a thin shell over the same service functions the UI uses."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7860


class CliError(Exception):
    """A user error: printed as one message, exit status 2."""


def _context(args: argparse.Namespace) -> Any:
    from app.config import load_settings
    from app.context import AppContext

    return AppContext(load_settings(args.data_dir, args.db_url))


def cmd_serve(args: argparse.Namespace) -> int:
    import dataclasses
    import ipaddress

    from app.auth import check_login, ensure_admin
    from app.config import load_settings
    from app.context import AppContext
    from app.services.projects import ensure_demo_project
    from app.ui.main import build_app, css

    try:
        loopback = ipaddress.ip_address(args.host).is_loopback
    except ValueError:
        loopback = args.host == "localhost"
    if not loopback and not args.multi_user:
        raise CliError(
            f"Refusing to bind {args.host} in single-user mode (no login, everyone is admin). "
            "Use --multi-user to serve other machines."
        )
    settings = load_settings(args.data_dir, args.db_url)
    ctx = AppContext(dataclasses.replace(settings, multi_user=args.multi_user))
    auth = None
    if args.multi_user:
        generated = ensure_admin(ctx, os.environ.get("INTENT_STUDIO_ADMIN_PASSWORD"))
        if generated:
            print(f"Created user 'admin' with password {generated} (shown once).", flush=True)

        def auth(name: str, password: str) -> bool:
            return check_login(ctx, name, password)

    if not args.no_demo:
        ensure_demo_project(ctx)
    import threading

    from app.jobs import WorkerSupervisor
    from app.services.maps import start_warm_up

    threading.Thread(target=ctx.warm_up, name="warm-up", daemon=True).start()
    start_warm_up()  # UMAP's numba compilation, off the request path
    supervisor = None if args.no_worker else WorkerSupervisor(ctx.settings)
    if supervisor is not None:
        supervisor.start()
    demo = build_app(ctx)
    print(
        f"Intent Studio on http://{args.host}:{args.port}  (data: {ctx.settings.data_dir})",
        flush=True,
    )
    demo.queue(default_concurrency_limit=4).launch(
        server_name=args.host,
        server_port=args.port,
        css=css(),
        show_error=True,
        auth=auth,
        auth_message="Intent Studio: sign in (ask an admin for an account).",
        prevent_thread_lock=False,
        quiet=True,
    )
    if supervisor is not None:
        supervisor.stop()
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    from app.config import load_settings
    from app.jobs import run_worker

    run_worker(load_settings(args.data_dir, args.db_url))
    return 0


def _parse_config(args: argparse.Namespace) -> dict[str, Any]:
    from app.services.training import parse_settings

    try:
        return {"method": args.method, **parse_settings(args.set or [])}
    except ValueError as exc:
        raise CliError(str(exc)) from exc


def cmd_train(args: argparse.Namespace) -> int:
    import threading
    import time

    from app.services import training

    ctx = _context(args)
    view, created = training.request_retrain(
        ctx, args.project, _parse_config(args), enqueue=args.queue
    )
    if not created:
        print(f"Job #{view.id} is already {view.status} for this project; following it.")
    runner = None
    if not args.queue and created:
        runner = threading.Thread(target=training.execute_job, args=(ctx, view.id), daemon=True)
        runner.start()
    last = ""
    try:
        while True:
            view = training.job(ctx, view.id)
            line = f"[{view.status}] {view.message}" + (
                f"  ETA {view.eta_seconds:.0f}s" if view.eta_seconds else ""
            )
            if line != last:
                print(line, flush=True)
                last = line
            if not view.active:
                break
            time.sleep(1.0)
    except KeyboardInterrupt:
        training.cancel(ctx, view.id)
        print("cancelling…", flush=True)
        if runner is not None:
            runner.join(30)
        view = training.job(ctx, view.id)
    if view.model_version_id:
        from app.services.versions import metrics

        m = metrics(ctx, args.project, view.model_version_id)
        base = m.get("base", {})
        print(
            json.dumps(
                {
                    "version": view.model_version_id,
                    "split": m.get("split"),
                    "accuracy": m.get("accuracy"),
                    "macro_f1": m.get("macro_f1"),
                    "frozen_accuracy": base.get("accuracy"),
                    "silhouette": m.get("silhouette"),
                    "frozen_silhouette": base.get("silhouette"),
                    "gate": m.get("gate"),
                    "train_seconds": m.get("train_seconds"),
                },
                indent=2,
            )
        )
    return 0 if view.status == "succeeded" else 1


def cmd_import(args: argparse.Namespace) -> int:
    from app.services.io import import_file

    ctx = _context(args)
    result = import_file(
        ctx,
        args.project,
        args.file,
        create_missing_intents=not args.no_create_intents,
        create_project_if_missing=True,
        on_existing="relabel" if args.relabel else "error",
    )
    print(result.message())
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from app.services.io import export_file

    n = export_file(_context(args), args.project, args.output)
    print(f"Exported {n} utterance(s) to {args.output}.")
    return 0


def _read_texts(args: argparse.Namespace) -> list[str]:
    texts = list(args.texts)
    if args.input:
        src = sys.stdin if args.input == "-" else open(args.input, encoding="utf-8")  # noqa: SIM115
        with src:
            texts += [line.rstrip("\n") for line in src if line.strip()]
    if not texts:
        raise CliError("Give utterances as arguments or with --input FILE (one per line).")
    return texts


def _write_predictions(results: list[dict[str, Any]], args: argparse.Namespace) -> None:
    if args.format == "jsonl":
        for r in results:
            print(json.dumps(r, ensure_ascii=False))
        return
    if args.format == "csv":
        import csv

        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(["text", "intent", "score", "margin", "nearest_example", "similarity"])
        for r in results:
            best = r["intents"][0]["best"] if r["intents"] else {"text": "", "similarity": ""}
            w.writerow(
                [r["text"], r["top"], r["score"], r["margin"], best["text"], best["similarity"]]
            )
        return
    for r in results:
        print(f"{r['text']}\n  → {r['top']} ({r['score']:.3f}, margin {r['margin']:.3f})")
        for n in r["neighbours"][: args.show]:
            print(f"     {n['similarity']:.3f}  [{'|'.join(n['labels'])}] {n['text']}")


def cmd_predict(args: argparse.Namespace) -> int:
    texts = _read_texts(args)
    if args.bundle:
        from core.bundle.reader import load

        predictor = load(args.bundle)
        results = predictor.predict(texts, k=args.k)
    else:
        if not args.project:
            raise CliError("Give --project NAME (or --bundle FILE).")
        from app.services.predict import predict

        results = predict(_context(args), args.project, texts, k=args.k)
    _write_predictions(results, args)
    return 0


def cmd_bundle_export(args: argparse.Namespace) -> int:
    from app.services.bundles import export_bundle

    version = "base" if args.version == "base" else (int(args.version) if args.version else None)
    info = export_bundle(_context(args), args.project, args.output, version=version, int8=args.int8)
    print(json.dumps(info, indent=2))
    return 0


def cmd_bundle_import(args: argparse.Namespace) -> int:
    from app.services.bundles import import_bundle

    name = import_bundle(_context(args), args.file, args.name)
    print(f"Imported the bundle as read-only project {name!r}.")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from app.services.reports import build_report

    out = Path(args.output) if args.output else None
    if out is not None and out.suffix.lower() != ".html":
        raise CliError("The report is an .html file: give a path ending in .html.")
    path = build_report(_context(args), args.project, out.parent if out else None)
    if out is not None:
        path = path.replace(out)
    print(path)
    return 0


def _sqlite_file(args: argparse.Namespace) -> Path:
    from app.config import load_settings

    settings = load_settings(args.data_dir, args.db_url)
    prefix = "sqlite:///"
    if not settings.database_url.startswith(prefix):
        raise CliError(
            "backup covers the built-in SQLite database; back up others with their tools."
        )
    return Path(settings.database_url[len(prefix) :])


def cmd_backup(args: argparse.Namespace) -> int:
    from app.config import load_settings
    from app.services.backup import backup

    settings = load_settings(args.data_dir, args.db_url)
    manifest = backup(_sqlite_file(args), settings.artifacts_dir, Path(args.output))
    files = manifest["files"]
    print(f"Backed up the database and {len(files) - 1} artifact file(s) to {args.output}.")  # type: ignore[arg-type]
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    from app.config import load_settings
    from app.services.backup import restore

    target = load_settings(args.data_dir, None).data_dir
    manifest = restore(Path(args.file), target)
    print(f"Restored the backup of {manifest['created_at']} into {target}.")
    return 0


def cmd_users(args: argparse.Namespace) -> int:
    from app.auth import add_user
    from storage.users import list_users, set_role

    ctx = _context(args)
    if args.action == "list":
        with ctx.db.session() as s:
            for u in list_users(s):
                print(f"{u.name}\t{u.role}")
        return 0
    if not args.name:
        raise CliError("Give the user's name.")
    if args.action == "add":
        password = os.environ.get("INTENT_STUDIO_PASSWORD")
        if password is None:
            import getpass

            password = getpass.getpass(f"Password for {args.name}: ")
        who = add_user(ctx, args.name, args.role, password)
        print(f"Added {who.name} ({who.role}).")
        return 0
    with ctx.db.session() as s:
        set_role(s, args.name, args.role)
    print(f"{args.name} is now a {args.role}.")
    return 0


def cmd_projects(args: argparse.Namespace) -> int:
    from app.services.projects import project_names, summary

    ctx = _context(args)
    for name in project_names(ctx):
        print(summary(ctx, name).headline().replace("**", ""))
    return 0


Command = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="intent-studio",
        description="Design a chatbot's intents: label examples, retrain, explain predictions.",
    )
    parser.add_argument(
        "--data-dir", help="data directory (default $INTENT_STUDIO_DATA_DIR or ./.intent-studio)"
    )
    parser.add_argument(
        "--db-url", help="SQLAlchemy database URL (default: SQLite in the data directory)"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log more")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("serve", help="start the web app (and its training worker)")
    p.add_argument("--host", default=DEFAULT_HOST, help="bind address (default 127.0.0.1)")
    p.add_argument(
        "--port", type=int, default=int(os.environ.get("INTENT_STUDIO_PORT", DEFAULT_PORT))
    )
    p.add_argument(
        "--no-demo", action="store_true", help="do not create the demo project on first start"
    )
    p.add_argument(
        "--no-worker", action="store_true", help="do not start a training worker beside the app"
    )
    p.add_argument(
        "--multi-user",
        action="store_true",
        help="require sign-in with roles (admin/designer/viewer); needed to bind a public address",
    )
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("worker", help="run a training worker on the job queue")
    p.set_defaults(func=cmd_worker)

    p = sub.add_parser("train", help="retrain a project's encoder and print progress and metrics")
    p.add_argument("--project", required=True)
    p.add_argument("--method", default="fast", choices=["fast", "convfit", "lora"])
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

    p = sub.add_parser(
        "import", help="import CSV, JSONL, Rasa YAML or intent .txt files into a project"
    )
    p.add_argument(
        "file",
        help="CSV (text,label|labels[,split]), JSONL, Rasa NLU .yml, or a folder/.zip of "
        "intent_name.txt files (one utterance per line)",
    )
    p.add_argument("--project", required=True)
    p.add_argument(
        "--no-create-intents", action="store_true", help="refuse labels that are not intents yet"
    )
    p.add_argument(
        "--relabel", action="store_true", help="texts already in the project get the file's labels"
    )
    p.set_defaults(func=cmd_import)

    p = sub.add_parser(
        "export",
        help="export a project: .csv, .jsonl, Rasa .yml, .zip or a folder (no suffix) of .txt files",
    )
    p.add_argument("--project", required=True)
    p.add_argument("-o", "--output", required=True)
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("predict", help="classify utterances with a project's pool or a bundle")
    p.add_argument("texts", nargs="*")
    p.add_argument("--project")
    p.add_argument("--bundle", help="a model bundle .zip (runs without the app's database)")
    p.add_argument("--input", help="file with one utterance per line ('-' = stdin)")
    p.add_argument("-k", type=int, default=1, help="examples per intent that make its score")
    p.add_argument("--format", choices=["text", "jsonl", "csv"], default="text")
    p.add_argument(
        "--show", type=int, default=3, help="neighbours shown per utterance (text format)"
    )
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser("bundle", help="export a model bundle, or open one as a read-only project")
    bundle_sub = p.add_subparsers(dest="bundle_command", required=True)
    b = bundle_sub.add_parser("export", help="write a model version as a bundle .zip")
    b.add_argument("--project", required=True)
    b.add_argument("--version", help="model version id, or 'base' (default: the active one)")
    b.add_argument("-o", "--output", required=True, help="the .zip to write")
    b.add_argument(
        "--int8",
        action="store_true",
        help="add an int8 ONNX encoder (refused if it disagrees with fp32 on >1%% of the test split)",
    )
    b.set_defaults(func=cmd_bundle_export)
    b = bundle_sub.add_parser("import", help="open a bundle as a new read-only project")
    b.add_argument("file")
    b.add_argument("--name", help="project name (default: the bundle's project + ' (bundle)')")
    b.set_defaults(func=cmd_bundle_import)

    p = sub.add_parser("report", help="write the stakeholder report (self-contained HTML)")
    p.add_argument("--project", required=True)
    p.add_argument("-o", "--output", help="the .html to write (default: <data-dir>/reports/)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("backup", help="back up the database and model files into one archive")
    p.add_argument("-o", "--output", required=True, help="the .tar.gz to write")
    p.set_defaults(func=cmd_backup)

    p = sub.add_parser("restore", help="restore a backup into an empty data directory")
    p.add_argument("file", help="a .tar.gz written by `intent-studio backup`")
    p.set_defaults(func=cmd_restore)

    p = sub.add_parser("users", help="add users, change roles, list users (multi-user mode)")
    p.add_argument("action", choices=["add", "role", "list"])
    p.add_argument("name", nargs="?")
    p.add_argument("--role", default="designer", choices=["viewer", "designer", "admin"])
    p.set_defaults(func=cmd_users)

    p = sub.add_parser("projects", help="list projects")
    p.set_defaults(func=cmd_projects)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # Idle OpenMP threads sleep instead of spinning: the app, the worker and UMAP share 2 cores.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from core.bundle.onnx import OnnxParityError
    from core.bundle.safety import BundleError
    from storage.errors import StorageError

    try:
        return int(args.func(args))
    except (
        CliError,
        StorageError,
        BundleError,
        OnnxParityError,
        ValueError,
        PermissionError,
        FileNotFoundError,
    ) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
