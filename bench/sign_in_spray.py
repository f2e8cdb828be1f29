"""Sign-ins under a password attack (issue 56, rows 2 and 5), on the app ``serve --multi-user``
runs (``app.web.web_app``), served in this process on a free loopback port with the default
sign-in limits. Client addresses come from ``X-Forwarded-For`` (uvicorn trusts it from loopback).

- ``--attack name``: ``--addresses`` addresses guess the admin's password, each in a loop
  (``--per-address`` at once), waiting as ``Retry-After`` says when held back.
- ``--attack spray``: the same addresses guess one password for made-up names (a new name
  each guess).

Meanwhile, after ``--warm`` seconds of attack, the owner (``admin``, right password) signs in
every ``--every`` seconds, each time from a new address, retrying as ``Retry-After`` says until
she gets in. Prints, per attack: the owner's time to get in (median, max) and how many tries it
took, and the attacker's checked guesses per minute (answers 400: a password was checked) and
held-back ones (429), as a table and the same as JSON.

Usage (peer: the same on the commit before the change, ``--code`` pointing at its checkout):
    python -m bench.sign_in_spray --attack name --seconds 150
    python -m bench.sign_in_spray --attack spray --seconds 150
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import itertools
import json
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

PASSWORD = "admin-password"


def _serve(app: Any) -> str:
    import uvicorn

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}"


async def _attack(base: str, args: argparse.Namespace) -> dict[str, Any]:
    import httpx

    got: Counter[int] = Counter()
    owner: list[tuple[float, int]] = []  # (seconds to get in, tries)
    owner_refused: Counter[str] = Counter()  # why the owner was held back (the message's start)
    names = itertools.count()
    stop = time.monotonic() + args.seconds
    limits = httpx.Limits(max_connections=args.addresses * args.per_address + 10)

    async with httpx.AsyncClient(base_url=base, timeout=600, limits=limits) as client:

        async def post(name: str, password: str, address: str) -> httpx.Response:
            form = {"username": name, "password": password}
            return await client.post("/login", data=form, headers={"X-Forwarded-For": address})

        async def guesser(address: str) -> None:
            for i in itertools.count():
                if time.monotonic() >= stop:
                    return
                name = "admin" if args.attack == "name" else f"user{next(names)}"
                answer = await post(name, f"guess-{address}-{i}", address)
                got[answer.status_code] += 1
                if answer.status_code == 429:
                    wait = float(answer.headers.get("Retry-After", "1"))
                    await asyncio.sleep(min(wait, max(0.0, stop - time.monotonic())))

        async def owner_signs_in() -> None:
            await asyncio.sleep(args.warm)
            for k in itertools.count(1):
                if time.monotonic() >= stop - args.every:
                    return
                started, tries = time.monotonic(), 0
                while True:
                    tries += 1
                    answer = await post("admin", PASSWORD, f"10.{k // 250}.{k % 250}.7")
                    if answer.status_code == 200:
                        owner.append((time.monotonic() - started, tries))
                        break
                    owner_refused[answer.text[:60]] += 1
                    if answer.status_code != 429 or time.monotonic() > stop:
                        owner.append((float("inf"), tries))
                        break
                    await asyncio.sleep(float(answer.headers.get("Retry-After", "1")))
                await asyncio.sleep(args.every)

        addresses = [f"198.51.100.{i + 1}" for i in range(args.addresses)]
        await asyncio.gather(
            *(guesser(a) for a in addresses for _ in range(args.per_address)), owner_signs_in()
        )
    minutes = args.seconds / 60
    times = [t for t, _ in owner]
    return {
        "attack": args.attack,
        "addresses": args.addresses,
        "seconds": args.seconds,
        "owner_sign_ins": len(owner),
        "owner_median_s": round(statistics.median(times), 2) if times else None,
        "owner_max_s": round(max(times), 2) if times else None,
        "owner_max_tries": max((n for _, n in owner), default=0),
        "attacker_checked_per_min": round(got[400] / minutes, 1),
        "attacker_held_per_min": round(got[429] / minutes, 1),
        "attacker_answers": dict(sorted(got.items())),
        "owner_refused": dict(owner_refused),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attack", choices=["name", "spray"], default="name")
    parser.add_argument("--addresses", type=int, default=32)
    parser.add_argument("--per-address", type=int, default=2, help="guesses at once per address")
    parser.add_argument("--seconds", type=float, default=150)
    parser.add_argument("--warm", type=float, default=20, help="attack alone before the owner")
    parser.add_argument("--every", type=float, default=5, help="seconds between owner sign-ins")
    parser.add_argument("--code", type=Path, help="a checkout to measure (default: this one)")
    args = parser.parse_args()
    if args.code is not None:
        sys.path.insert(0, str(args.code.resolve()))
        for name in [m for m in sys.modules if m.split(".")[0] in ("app", "core", "storage")]:
            del sys.modules[name]

    from app.access import auth
    from app.config import load_settings

    try:  # the serving state (issue 59); a checkout before: AppContext(settings)
        from app.serving.state import ServingState

        open_state: Any = ServingState.open
    except ImportError:
        from app.serving.context import AppContext as open_state  # type: ignore[no-redef]
    from app.web import web_app

    data = Path(tempfile.mkdtemp()) / "data"
    ctx = open_state(dataclasses.replace(load_settings(data), multi_user=True))
    auth.ensure_admin(ctx.db, PASSWORD)
    base = _serve(web_app(ctx, host="127.0.0.1", port=0))
    result = asyncio.run(_attack(base, args))
    keys = [k for k in result if k not in ("attacker_answers", "owner_refused")]
    print(" | ".join(keys))
    print(" | ".join(str(result[k]) for k in keys))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
