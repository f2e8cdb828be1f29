"""``serve`` (the web app with its training worker) and ``worker``."""

from __future__ import annotations

import argparse
import errno
import logging
import os
import signal
import socket
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from app.access.actions import OPERATE
from app.cli.common import DEFAULT_HOST, DEFAULT_PORT, CliError, acts, whole
from app.cli.ticking import ticking

if TYPE_CHECKING:
    from app.serving.state import ServingState
    from app.worker import WorkerSupervisor

logger = logging.getLogger(__name__)

# Seconds a stopping server gives the requests under way to end (then answered 503:
# app.perimeter.draining); compose.yaml's stop_grace_period for the app covers it.
GRACEFUL_S = 5


def _warm_up(serving_state: ServingState, umap: threading.Thread) -> None:
    """Load the encoders, build every project's pool and encode the labelling queue's candidates
    before the first request, and wait for UMAP's compilation (``umap``); then move everything
    built so far out of the cyclic garbage collector's way (``gc.freeze``): a full collection
    otherwise walks millions of long-lived objects (the models, the app) and paused labelling
    for 0.5-0.8 s at a time. ``serving_state.readiness`` follows it (``/api/v1/ready`` answers 200 once
    it ends); a stop ends it early. Meanwhile the data directory's ``warming`` file says so to a
    worker on this machine, which holds its automatic retrains until it ends
    (:func:`app.perimeter.in_use.warming`)."""
    import gc
    import time

    from app.perimeter.in_use import warming
    from app.services.design.map_warm_up import encode_map_rows
    from app.services.queue.queue import warm_up as warm_queue
    from app.serving.models import load_bases
    from app.worker.encoding import fan_out_for
    from core.encoding.exit_gate import Exiting
    from core.errors import logged

    start = time.monotonic()

    def said(what: str) -> None:  # each step as it ends: a first start is never silent
        print(f"Warm-up: {what} ({time.monotonic() - start:.0f} s)", flush=True)

    with warming(serving_state.settings.data_dir):  # no automatic retrain meanwhile
        try:
            with ticking("warm-up: loading the encoders and building each project's pool"):
                serving_state.live.warm_up(serving_state.readiness)
            if serving_state.readiness.is_stopping:
                return
            said("encoders loaded and every project's pool built")
            with ticking("warm-up: scoring the Label tab's first cards"):
                # the rest of every project's rows: encoded in the background (issue 72)
                warm_queue(serving_state.live, fan_out_for(serving_state.settings))
            said("the Label tab's first cards scored")
            if serving_state.readiness.is_stopping:
                return
            with ticking("warm-up: encoding the maps' utterances"):
                encoded = encode_map_rows(serving_state.live)
            said(f"the maps' utterances encoded ({encoded} new)")
            if umap.is_alive():
                print(
                    "Warm-up: waiting for UMAP's kernels to compile (the Map's projection)",
                    flush=True,
                )
            with ticking("warm-up: compiling UMAP's kernels"):
                umap.join()
        except Exiting:  # the server is stopping (core.encoding.exit_gate)
            return
        except Exception:  # the app still serves: what is missing is built on first use
            serving_state.readiness.warm()  # ready all the same, before a programming error is raised again
            logged(logger, "warm-up failed; projects are built on first use")
    gc.collect()
    gc.freeze()
    serving_state.readiness.warm()
    print("Warm: encoders loaded, pools and queues ready.", flush=True)
    if serving_state.settings.auto_retrain:  # the next versions come by themselves
        try:
            bases = load_bases(serving_state.db, serving_state.live.models)
        except Exiting:
            return
        said(f"base encoders loaded for the next versions ({', '.join(bases) or 'none'})")


def bind(host: str, port: int) -> socket.socket:
    """The server's socket, bound before anything is loaded: a port another program holds is
    refused at once with what to do (it took 24.6 s, and printed this server's URL as if the
    other server were this one, issue 57)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family=family)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise CliError(
                f"Port {port} on {host} is already in use (another Intent Studio, or another "
                "program): stop it, or serve on another port with --port."
            ) from None
        raise CliError(f"Cannot serve on {host}:{port}: {exc.strerror or exc}.") from None
    sock.set_inheritable(True)
    return sock


def serve_until_stopped(
    serving_state: ServingState, app: object, sock: socket.socket, host: str, port: int
) -> None:
    """Serve ``app`` on ``sock`` until SIGINT/SIGTERM. The signal marks ``serving_state.readiness``
    stopping at once: new requests are answered 503 and ``/ready`` says so
    (:mod:`app.perimeter.draining`); requests under way get :data:`GRACEFUL_S` to end."""
    import uvicorn

    from core.encoding.exit_gate import NATIVE

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            serving_state.readiness.stopping()
            super().handle_exit(sig, frame)

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            await super().shutdown(sockets)
            # the requests under way are answered (or cut short: 503); their threads may still
            # wait behind the warm-up, and the event loop's close joins them: model work is
            # refused from now on, so they end (core.encoding.exit_gate)
            NATIVE.close()

    config = uvicorn.Config(
        app,  # type: ignore[arg-type]
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        # open event streams (a browser tab) must not hold a Ctrl+C / SIGTERM forever
        timeout_graceful_shutdown=GRACEFUL_S,
    )
    # uvicorn raises the signal it stopped for again once it has served, under the handler it
    # found: SIGTERM's default killed the process there (exit 143), before the worker and the
    # warm-up were stopped. Found handlers that do nothing, the stop goes on to its end, exit 0;
    # a second signal during it acts as usual.
    found = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        Server(config).run(sockets=[sock])
    finally:
        for sig, handler in found.items():
            signal.signal(sig, handler)


def _stop_serving(serving_state: ServingState, supervisor: WorkerSupervisor | None) -> None:
    """After the server stopped answering: the exit refuses new model work and waits for the
    calls under way (:mod:`core.encoding.exit_gate`), so the warm-up and any request's thread
    still waiting on it end now, not when the warm-up would have (a stop during warm-up took
    120.8 s); then the worker and the background fits are stopped and waited for."""
    from app.serving.row_encoding import spaces_of
    from core.encoding.exit_gate import NATIVE

    serving_state.readiness.stopping()
    NATIVE.close()
    spaces_of(serving_state.live).close()  # its chunk under way refused: the rows kept on disk
    if supervisor is not None:  # its waits said on the terminal, where Ctrl+C is pressed again
        supervisor.stop(say=lambda line: print(line, flush=True))
    serving_state.close()


# Gradio reads these at start-up; each would expose the app beyond what the flags say: a public
# share tunnel, another bind address or port, files outside the app, live code editing, an MCP
# server. The flags decide; these are dropped with a warning.
EXPOSING_ENV = (
    "GRADIO_SHARE",
    "GRADIO_SERVER_NAME",
    "GRADIO_SERVER_PORT",
    "GRADIO_ALLOWED_PATHS",
    "GRADIO_VIBE_MODE",
    "GRADIO_MCP_SERVER",
    "GRADIO_WATCH_DIRS",
)


def drop_exposing_env(environ: dict[str, str] | os._Environ[str]) -> list[str]:
    """Remove the ``GRADIO_*`` variables that would expose the app; returns the names removed.

    Example:
        >>> env = {"GRADIO_SHARE": "True", "GRADIO_ANALYTICS_ENABLED": "False"}
        >>> drop_exposing_env(env), env
        (['GRADIO_SHARE'], {'GRADIO_ANALYTICS_ENABLED': 'False'})
    """
    found = [name for name in EXPOSING_ENV if name in environ]
    for name in found:
        del environ[name]
    return found


@acts(OPERATE)
def cmd_serve(args: argparse.Namespace) -> int:
    # said before the libraries load: a first start on a busy machine takes a minute or more,
    # and each stretch says it goes on every 30 s (app.cli.ticking)
    print("Starting Intent Studio: loading its libraries…", flush=True)
    import dataclasses
    import faulthandler
    import ipaddress

    with ticking("loading the libraries"):
        from app.access.auth import ensure_admin
        from app.config import load_settings
        from app.services.projects.projects import ensure_demo_project
        from app.serving.state import ServingState
        from app.web import web_app

    try:
        loopback = ipaddress.ip_address(args.host).is_loopback
    except ValueError:
        loopback = args.host == "localhost"
    if not loopback and not args.multi_user:
        raise CliError(
            f"Refusing to bind {args.host} in single-user mode (no login, everyone is admin). "
            "Use --multi-user to serve other machines."
        )
    sock = bind(args.host, args.port)  # first: a busy port is refused before anything loads
    # `kill -USR1 <pid>`: every thread's stack to the log, for an operator (or a test) asking
    # what a server that stopped answering is doing, without stopping it.
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    dropped = drop_exposing_env(os.environ)
    if dropped:
        print(f"Ignoring {', '.join(dropped)}: the command's flags decide who can reach the app.")
    settings = load_settings(args.data_dir, args.db_url)
    warn_if_exposed(settings.data_dir, show=True)
    serving_state = ServingState.open(dataclasses.replace(settings, multi_user=args.multi_user))
    serving_state.live.switch_in_background = True  # a new version: no key waits for its pool
    if args.multi_user:
        generated = ensure_admin(serving_state.db, os.environ.get("INTENT_STUDIO_ADMIN_PASSWORD"))
        if generated:
            print(f"Created user 'admin' with password {generated} (shown once).", flush=True)
    made_demo = not args.no_demo and ensure_demo_project(serving_state.db) is not None
    from app.services.design.map_warm_up import start_warm_up
    from app.worker import WorkerSupervisor, queue_for

    umap = start_warm_up(serving_state.maps)  # UMAP's numba compilation, off the request path
    serving_state.readiness.warming(0)  # not ready until the warm-up ends (/api/v1/ready)
    print(
        "Warming up in the background (the page works meanwhile; its first answers wait for "
        "it): loading the encoder, building each project's pool, scoring the Label tab's first "
        "cards.",
        flush=True,
    )
    threading.Thread(
        target=_warm_up, args=(serving_state, umap), name="warm-up", daemon=True
    ).start()
    serving_state.training.enqueue = queue_for(serving_state.settings)
    supervisor = None if args.no_worker else WorkerSupervisor(serving_state.settings)
    if supervisor is not None:
        supervisor.start()
    if made_demo:  # its imported labels retrain it at once: say why (issue 75 item 2)
        from app.services.projects.first_retrain import demo_line

        said = demo_line(serving_state.settings.auto_retrain and supervisor is not None)
        if said:
            print(said, flush=True)
    try:
        # One server, one port: the REST API (/api/v1, /docs) with the Gradio UI mounted at /.
        # Never a share tunnel (and no GRADIO_SHARE: see drop_exposing_env).
        print("Building the app's pages…", flush=True)
        with ticking("building the app's pages"):
            app = web_app(serving_state, host=args.host, port=args.port)
        print(
            f"Intent Studio on http://{args.host}:{args.port}  (data: {serving_state.settings.data_dir}; "
            f"REST API docs at /docs)",
            flush=True,
        )
        serve_until_stopped(serving_state, app, sock, args.host, args.port)
    finally:
        _stop_serving(serving_state, supervisor)
    return 0


@acts(OPERATE)
def cmd_worker(args: argparse.Namespace) -> int:
    import faulthandler

    from app.config import load_settings

    if args.check:
        return _check_worker(args)
    from app.worker.stopping import STOP, obey_signals

    settings = load_settings(args.data_dir, args.db_url)
    # the stop is obeyed from here, before the heavy imports: stopped as it starts, the worker
    # exits 0 (SIGTERM's default killed it, -15: issue 73 item 12)
    obey_signals(STOP, settings.stop_grace)
    from app.worker import run_worker

    # `kill -USR1 <pid>`: every thread's stack to the worker's log (as serve's)
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    warn_if_exposed(settings.data_dir)
    run_worker(settings)
    leave_now()
    return 0


def warn_if_exposed(data_dir: Path, *, show: bool = False) -> None:
    """Say once, at start, when other accounts of the machine may read the data directory (one
    log line; with ``show``, in the command's own output too): the app changes no mode of what
    it did not create (:mod:`app.perimeter.private_data`)."""
    from app.perimeter.private_data import exposure_warning

    said = exposure_warning(data_dir)
    if said is not None:
        logger.warning(said)
        if show:
            print(said, flush=True)


def leave_now() -> None:
    """A stopped worker's exit: its job's thread is joined (the job ended or went back to the
    queue) and its contexts closed; what may be left is its warm-up, inside a native call that
    cannot be cut (an encoder half loaded: 10-50 s on a busy machine, which the exit waited
    for: issue 64 item 7). Nothing it does needs keeping (every file it writes is written
    under a temporary name and renamed), so the process leaves at once, without the
    interpreter's finalisation, which would abort it with a thread inside torch (exit 134)."""
    from app.worker.stopping import leave
    from core.encoding.exit_gate import NATIVE

    NATIVE.close(timeout=1.0)  # a step or a chunk that ends within a second, ends
    leave()


def _check_worker(args: argparse.Namespace) -> int:
    """``worker --check``: 0 and one line when a worker here could take a job now, else 1 (what
    Docker's healthcheck reads as unhealthy) and what is wrong; never 2 (reserved by Docker)."""
    from app.config import load_settings
    from app.worker.check import report

    try:
        status, text = report(load_settings(args.data_dir, args.db_url))
    except ValueError as exc:  # a setting that does not parse
        status, text = 1, f"not ready: {exc}"
    print(text, file=sys.stderr if status else sys.stdout)
    return status


def add_parser(sub: Any) -> None:
    """This module's commands on the ``intent-studio`` parser (``sub``: its subparsers)."""
    p = sub.add_parser("serve", help="start the web app (and its training worker)")
    p.add_argument("--host", default=DEFAULT_HOST, help="bind address (default 127.0.0.1)")
    p.add_argument(
        "--port",
        type=whole("port", 1, 65535),
        default=int(os.environ.get("INTENT_STUDIO_PORT", DEFAULT_PORT)),
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
    p.add_argument(
        "--check",
        action="store_true",
        help="do not run: check that the database, queue and model store answer and that these "
        "settings agree with the app's; exit 1 if not (the worker containers' healthcheck)",
    )
    p.set_defaults(func=cmd_worker)
