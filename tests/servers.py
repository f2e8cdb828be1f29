"""Real servers on loopback for the team set-up's tests: PostgreSQL (``initdb`` in a temporary
folder, ``pg_ctl`` on a free port, its unix socket in that folder), ``redis-server`` and moto's
S3-compatible server, each started once per test session on 127.0.0.1 and stopped at its end; a
:class:`Relay` in front of one takes it away for real (connections refused) and brings it back.

``make test`` installs PostgreSQL and Redis from Debian's packages and moto from PyPI; a test that
needs a server whose program is missing is skipped with a message saying which.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_port(
    port: int, proc: subprocess.Popen[bytes], what: str, timeout: float = 30.0
) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} while starting")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within {timeout:.0f} s")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """A test server keeps nothing worth a clean shutdown."""
    if proc.poll() is None:
        proc.kill()
    proc.wait(10)


# --- PostgreSQL ------------------------------------------------------------------------------


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


@dataclass
class Postgres:
    """A running PostgreSQL; :meth:`new_database` gives each test its own migrated database."""

    port: int
    folder: Path
    template: str = "studio_template"

    def url(self, database: str) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def execute(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.url("postgres").replace("+psycopg", ""), autocommit=True) as c:
            c.execute(sql)  # type: ignore[arg-type]

    def migrate_template(self) -> None:
        from storage.db import Database

        self.execute(f"CREATE DATABASE {self.template}")
        Database(self.url(self.template)).dispose()

    def new_database(self) -> str:
        """A fresh database with the whole schema (copied from a migrated template): its URL."""
        name = f"t_{uuid.uuid4().hex[:12]}"
        self.execute(f"CREATE DATABASE {name} TEMPLATE {self.template}")
        return self.url(name)


def start_postgres() -> Iterator[Postgres]:
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        pytest.skip("PostgreSQL is not installed (initdb/pg_ctl): `make test` installs it")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg is not installed: `make test` installs the dev extras")
    # initdb refuses to run as root: then the cluster belongs to the postgres user.
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_user:
        import pwd

        try:
            pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root without a 'postgres' user to own a test cluster")
    folder = Path(tempfile.mkdtemp(prefix="intent-studio-pg-"))
    data = folder / "data"
    if as_user:
        shutil.chown(folder, "postgres")
    port = free_port()
    subprocess.run(
        [*as_user, initdb, "-D", str(data), "-U", "postgres", "-A", "trust", "-E", "UTF8", "-N"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    options = (
        f"-c listen_addresses=127.0.0.1 -p {port} -k {folder} -c fsync=off "
        "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
    )
    subprocess.run(
        [
            *as_user,
            pg_ctl,
            "-D",
            str(data),
            "-o",
            options,
            "-l",
            str(folder / "log"),
            "-w",
            "start",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    server = Postgres(port, folder)
    try:
        server.migrate_template()
        yield server
    finally:
        subprocess.run(
            [*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "stop"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        shutil.rmtree(folder, ignore_errors=True)


# --- Redis -----------------------------------------------------------------------------------


def start_redis() -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed: `make test` installs it")
    port = free_port()
    args = [binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_port(port, proc, "redis-server")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        _stop(proc)


# --- S3 (moto's server) ----------------------------------------------------------------------


@dataclass
class S3:
    endpoint: str

    def env(self) -> dict[str, str]:
        """What a process needs to reach the bucket: the endpoint and (any) credentials."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
        }

    def new_bucket(self) -> str:
        """A new empty bucket: its name."""
        import boto3

        name = f"b-{uuid.uuid4().hex[:12]}"
        client = boto3.client("s3", endpoint_url=self.endpoint, **_creds(self.env()))
        client.create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str) -> list[str]:
        import boto3

        client = boto3.client("s3", endpoint_url=self.endpoint, **_creds(self.env()))
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket)
        return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


def _creds(env: dict[str, str]) -> dict[str, str]:
    return {
        "aws_access_key_id": env["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": env["AWS_SECRET_ACCESS_KEY"],
        "region_name": env["AWS_DEFAULT_REGION"],
    }


def start_s3() -> Iterator[S3]:
    try:
        import moto.server  # noqa: F401
        import s3fs  # noqa: F401
    except ImportError:
        pytest.skip("moto[server] and s3fs are not installed: `make test` installs the dev extras")
    port = free_port()
    args = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_port(port, proc, "moto's S3 server")
        yield S3(f"http://127.0.0.1:{port}")
    finally:
        _stop(proc)


# --- a server going away for real ---------------------------------------------------------


class Relay:
    """127.0.0.1:``port`` relayed to ``target`` until :meth:`down` (then: refused) or
    :meth:`up` again."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = 0
        self._sockets: list[socket.socket] = []
        self.up()

    def up(self) -> None:
        listener = socket.create_server(("127.0.0.1", self.port))
        self.port = listener.getsockname()[1]
        self._sockets = [listener]
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            self._sockets += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := a.recv(65536):
                b.sendall(data)
        with contextlib.suppress(OSError):
            b.shutdown(socket.SHUT_RDWR)

    def down(self) -> None:
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
