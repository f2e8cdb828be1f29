"""Hostile floods (issue 27, rows 2 and 5): how long another user's one-line predict takes while
someone floods the server, on the app ``serve --multi-user`` runs (``app.web.web_app``), served
in this process on a free loopback port, on a six-utterance project.

- ``password``: 4 clients send wrong passwords for a real user, in a loop. ``--no-sign-in-limit``
  raises the per-name and per-address limits out of the way, so every attempt is checked and the
  number shows what keeping argon2 off the event loop buys alone.
- ``lines``: one viewer token sends ``--flood`` concurrent one-line REST predicts.

For each: the other user's predict (median and max of ``--asks``) alone, then during the flood,
and what the flood got (status codes). Prints a table and the same as JSON.

Usage:
    python -m bench.floods --attack password --no-sign-in-limit
    python -m bench.floods --attack lines --flood 1000
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import socket
import statistics
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

PROJECT = "shop"
EXAMPLES = {
    "track_order": ["where is my parcel", "track my order", "has my package shipped"],
    "cancel_order": ["cancel my order", "I want to cancel it", "stop my purchase"],
}


def _team(data_dir: Path) -> tuple[Any, dict[str, str]]:
    from app.access import auth, open_project
    from app.config import load_settings
    from app.services.labelling import data as data_svc
    from app.services.projects.projects import new_project
    from app.serving.state import ServingState

    ctx = ServingState.open(dataclasses.replace(load_settings(data_dir), multi_user=True))
    auth.ensure_admin(ctx.db, "admin-password")
    for name in ("dana", "vic"):
        auth.add_user(ctx.db, name, "viewer", f"{name}-password")
    new_project(ctx.db, PROJECT)
    for intent, texts in EXAMPLES.items():
        for text in texts:
            p = open_project(ctx.db, PROJECT)
            data_svc.add_utterance(ctx.db, p, text, [intent], create=True)
    return ctx, {name: auth.issue_token(ctx.db, name) for name in ("dana", "vic")}


def _serve(app: Any) -> tuple[str, Any]:
    import uvicorn

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}", server


async def _ask(client: Any, token: str) -> tuple[int, float]:
    started = time.perf_counter()
    answer = await client.post(
        f"/api/v1/projects/{PROJECT}/predict",
        json={"text": "where is my parcel"},
        headers={"Authorization": f"Bearer {token}"},
    )
    return answer.status_code, time.perf_counter() - started


async def _measure(base: str, tokens: dict[str, str], args: argparse.Namespace) -> dict[str, Any]:
    import httpx

    limits = httpx.Limits(max_connections=args.flood + 20)
    async with httpx.AsyncClient(base_url=base, timeout=600, limits=limits) as client:
        await _ask(client, tokens["dana"])  # warm: the encoder and the pool
        alone = [(await _ask(client, tokens["dana"]))[1] for _ in range(args.asks)]
        got: Counter[int] = Counter()
        stop = asyncio.Event()

        async def guesses() -> None:
            while not stop.is_set():
                form = {"username": "dana", "password": "a wrong guess"}
                got[(await client.post("/login", data=form)).status_code] += 1

        async def vic_line(i: int) -> None:
            got[
                (
                    await client.post(
                        f"/api/v1/projects/{PROJECT}/predict",
                        json={"text": f"where is parcel {i}"},
                        headers={"Authorization": f"Bearer {tokens['vic']}"},
                    )
                ).status_code
            ] += 1

        if args.attack == "password":
            flood = [asyncio.create_task(guesses()) for _ in range(4)]
        else:
            flood = [asyncio.create_task(vic_line(i)) for i in range(args.flood)]
        await asyncio.sleep(0.5)
        during = [(await _ask(client, tokens["dana"]))[1] for _ in range(args.asks)]
        stop.set()
        await asyncio.gather(*flood)
    return {
        "attack": args.attack,
        "sign_in_limit": not args.no_sign_in_limit,
        "alone_median_s": round(statistics.median(alone), 3),
        "alone_max_s": round(max(alone), 3),
        "during_median_s": round(statistics.median(during), 3),
        "during_max_s": round(max(during), 3),
        "flood_answers": dict(sorted(got.items())),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attack", choices=["password", "lines"], default="password")
    parser.add_argument("--flood", type=int, default=1000, help="one-liners at once (lines)")
    parser.add_argument("--asks", type=int, default=8, help="the other user's predicts timed")
    parser.add_argument("--no-sign-in-limit", action="store_true", help="check every attempt")
    args = parser.parse_args()

    from app.perimeter.sign_in import SignInLimits
    from app.web import web_app

    ctx, tokens = _team(Path(tempfile.mkdtemp()) / "data")
    high = 10**9
    limits = SignInLimits(per_name_and_address=high, per_name=high, per_address=high, waiting=high)
    app = web_app(ctx, host="127.0.0.1", port=0, sign_in=limits if args.no_sign_in_limit else None)
    base, server = _serve(app)
    try:
        row = asyncio.run(_measure(base, tokens, args))
    finally:
        server.should_exit = True
    print(f"{'attack':<10}{'alone p50/max (s)':>20}{'during p50/max (s)':>22}  flood answers")
    print(
        f"{row['attack']:<10}{row['alone_median_s']:>10.2f} / {row['alone_max_s']:<7.2f}"
        f"{row['during_median_s']:>12.2f} / {row['during_max_s']:<7.2f}  {row['flood_answers']}"
    )
    print(json.dumps(row))


if __name__ == "__main__":
    main()
