"""compose.yaml, which no test machine can run (no docker), checked against the app itself: each
app and worker command parses with the real ``intent-studio`` parser and names the subcommand its
service needs; the environment names are the ones the settings read, and every process loads the
same settings; each URL points at a service of the file, on the port it listens on, with its
credentials; the data directory is a mounted volume; every long-running service has a healthcheck
and a restart policy, and ``depends_on`` waits only on what can report; images are pinned; every
shell line parses; the GPU worker and the TLS front are wired as documented.
``tests/app/test_dockerfile.py`` checks the image; ``make team-local`` runs this topology."""

from __future__ import annotations

import argparse
import inspect
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

import app.config
from app.cli import build_parser
from app.config import ENV_ARTIFACTS_URL, ENV_DB_URL, ENV_DEVICE, ENV_QUEUE_URL, load_settings

ROOT = Path(__file__).resolve().parents[2]
COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
SERVICES: dict[str, dict[str, Any]] = COMPOSE["services"]
# The services built from this checkout (the app and its workers): the others are servers.
STUDIO = sorted(name for name, s in SERVICES.items() if "build" in s)
WORKERS = [name for name in STUDIO if name != "app"]
# One-shot services: others wait for them to exit 0; everything else runs for good.
ONE_SHOT = {
    target
    for s in SERVICES.values()
    for target, how in (s.get("depends_on") or {}).items()
    if how.get("condition") == "service_completed_successfully"
}
LONG_RUNNING = sorted(set(SERVICES) - ONE_SHOT)


def words(value: str | list[str]) -> list[str]:
    return shlex.split(value) if isinstance(value, str) else [str(v) for v in value]


def studio_args(service: str) -> argparse.Namespace:
    command = words(SERVICES[service]["command"])
    assert command[0] == "intent-studio", command
    return build_parser().parse_args(command[1:])


def env(service: str) -> dict[str, str]:
    return {k: str(v) for k, v in (SERVICES[service].get("environment") or {}).items()}


def listening_port(service: str, flag: str, default: int) -> int:
    """The port a server's command sets with ``flag``, else its image's default."""
    command = words(SERVICES[service].get("command") or [])
    return int(command[command.index(flag) + 1]) if flag in command else default


def test_the_topology_is_an_app_and_workers_beside_the_servers():
    assert STUDIO == ["app", "worker", "worker-gpu"]
    assert {"bucket"} == ONE_SHOT


def test_each_studio_command_parses_and_names_its_subcommand():
    serve = studio_args("app")
    assert serve.command == "serve"
    assert serve.multi_user, "a bind beyond loopback needs --multi-user (serve refuses it)"
    assert serve.host == "0.0.0.0" and serve.no_worker  # the workers are services of their own
    published = [str(p).rpartition(":")[2] for p in SERVICES["app"]["ports"]]
    assert published == [str(serve.port)]
    for worker in WORKERS:
        args = studio_args(worker)
        assert args.command == "worker" and not args.check


def test_the_command_is_the_entry_point_the_package_installs():
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert words(SERVICES["app"]["command"])[0] in scripts


@pytest.mark.parametrize("service", STUDIO)
def test_the_data_dir_is_a_volume_of_the_service_s_own(service):
    data_dir = studio_args(service).data_dir
    mounts = {
        target: source
        for source, target, *_ in (str(v).split(":") for v in SERVICES[service]["volumes"])
    }
    assert data_dir in mounts, f"{service}: nothing is mounted at --data-dir {data_dir}"
    assert mounts[data_dir] in COMPOSE["volumes"]
    others = {str(v).split(":")[0] for s in STUDIO if s != service for v in SERVICES[s]["volumes"]}
    assert mounts[data_dir] not in others  # each process keeps its own cache


def _names_read_by_the_app() -> set[str]:
    constants = {v for k, v in vars(app.config).items() if k.startswith("ENV_")}
    literals = {
        m
        for path in (ROOT / "app").rglob("*.py")
        for m in re.findall(r"\"(INTENT_STUDIO_[A-Z0-9_]+)\"", path.read_text(encoding="utf-8"))
    }
    return constants | literals


def test_every_environment_name_is_one_the_app_or_its_libraries_read():
    import uvicorn.config

    from storage import remote_artifacts

    read = _names_read_by_the_app()
    for service in STUDIO:
        names = set(env(service))
        assert {ENV_DB_URL, ENV_QUEUE_URL, ENV_ARTIFACTS_URL} <= names, service
        ours = {n for n in names if n.startswith("INTENT_STUDIO_")}
        assert ours <= read, f"{service}: no code reads {sorted(ours - read)}"
        assert "AWS_ENDPOINT_URL" in inspect.getsource(remote_artifacts)
        if "FORWARDED_ALLOW_IPS" in names:
            assert "FORWARDED_ALLOW_IPS" in inspect.getsource(uvicorn.config)


def test_every_process_loads_the_same_team_settings(tmp_path, monkeypatch):
    """What a worker compares with the job it takes, and the servers every process must share."""
    loaded = {}
    for service in STUDIO:
        for name in [n for n in os.environ if n.startswith("INTENT_STUDIO_")]:
            monkeypatch.delenv(name)
        for name, value in env(service).items():
            monkeypatch.setenv(name, value)
        s = load_settings(tmp_path / service)
        loaded[service] = (s.db_url, s.queue_url, s.job_timeout, s.shared_with_workers())
    assert len(set(map(repr, loaded.values()))) == 1, loaded


def test_the_database_url_reaches_the_postgres_service_as_its_user():
    from sqlalchemy.engine import make_url

    url = make_url(env("app")[ENV_DB_URL])
    pg = SERVICES[url.host or ""]
    assert pg["image"].startswith("postgres:")
    assert url.drivername == "postgresql+psycopg"  # psycopg 3: the team extra's driver
    assert url.port == 5432  # the image's, no -p in its command
    assert (url.username, url.password, url.database) == (
        pg["environment"]["POSTGRES_USER"],
        pg["environment"]["POSTGRES_PASSWORD"],
        pg["environment"]["POSTGRES_DB"],
    )


def test_the_queue_url_reaches_the_redis_service():
    url = urlsplit(env("app")[ENV_QUEUE_URL])
    assert url.scheme == "redis" and SERVICES[url.hostname or ""]["image"].startswith("redis:")
    assert url.port == listening_port(url.hostname or "", "--port", 6379)


def test_the_artifacts_url_is_the_bucket_the_bucket_service_makes_on_minio():
    app_env = env("app")
    endpoint = urlsplit(app_env["AWS_ENDPOINT_URL"])
    minio = SERVICES[endpoint.hostname or ""]
    assert "/minio:" in minio["image"]
    assert endpoint.port == 9000 and "--address" not in words(minio["command"])
    assert (app_env["AWS_ACCESS_KEY_ID"], app_env["AWS_SECRET_ACCESS_KEY"]) == (
        minio["environment"]["MINIO_ROOT_USER"],
        minio["environment"]["MINIO_ROOT_PASSWORD"],
    )
    script = words(SERVICES["bucket"]["entrypoint"])[-1]
    alias = re.search(r"mc alias set (\S+) (\S+) (\S+) (\S+)", script)
    assert alias is not None
    name, url, user, password = alias.groups()
    assert (url, user, password) == (
        app_env["AWS_ENDPOINT_URL"],
        app_env["AWS_ACCESS_KEY_ID"],
        app_env["AWS_SECRET_ACCESS_KEY"],
    )
    bucket = urlsplit(app_env[ENV_ARTIFACTS_URL])
    assert bucket.scheme == "s3"
    assert f"mc mb --ignore-existing {name}/{bucket.hostname}" in script


@pytest.mark.parametrize("service", LONG_RUNNING)
def test_every_long_running_service_has_a_healthcheck_and_a_restart_policy(service):
    s = SERVICES[service]
    check = s.get("healthcheck") or {}
    assert check.get("test") and not check.get("disable"), f"{service} has no healthcheck"
    assert words(check["test"])[0] in ("CMD", "CMD-SHELL")
    assert s.get("restart") in ("always", "unless-stopped", "on-failure"), service


def test_a_one_shot_service_is_not_restarted():
    for service in ONE_SHOT:
        assert SERVICES[service].get("restart", "no") == "no"


def test_depends_on_waits_only_on_what_can_say_it_is_ready():
    for name, s in SERVICES.items():
        depends = s.get("depends_on") or {}
        assert isinstance(depends, dict), f"{name}: depends_on without conditions"
        for target, how in depends.items():
            assert target in SERVICES, f"{name} depends on a missing {target}"
            if how["condition"] == "service_healthy":
                assert SERVICES[target].get("healthcheck"), f"{target} has no healthcheck"
            else:
                assert how["condition"] == "service_completed_successfully", (name, target)


def test_the_worker_healthcheck_is_the_workers_own_check_on_its_data_dir():
    for worker in WORKERS:
        test = words(SERVICES[worker]["healthcheck"]["test"])
        assert test[0] == "CMD"
        check = build_parser().parse_args(test[2:])
        assert test[1] == "intent-studio" and check.command == "worker" and check.check
        assert check.data_dir == studio_args(worker).data_dir


def test_the_app_healthcheck_asks_the_readiness_route_on_the_app_s_port(serving_state):
    """Issue 57 item 4: the healthcheck asked /health, which said 200 before the warm-up ended;
    /ready says 503 until the app can serve."""
    from fastapi.testclient import TestClient

    from app.api import create_api

    test = words(SERVICES["app"]["healthcheck"]["test"])
    assert test[:3] == ["CMD", "python", "-c"]  # python:3.11-slim has no curl
    (url,) = re.findall(r"'(http://[^']+)'", test[3])
    parts = urlsplit(url)
    assert parts.hostname == "127.0.0.1" and parts.port == studio_args("app").port
    with TestClient(create_api(serving_state)) as client:
        serving_state.readiness.warming(3)  # as serve's warm-up does
        warming = client.get(parts.path)  # no token: the healthcheck has none
        serving_state.readiness.warm()
        warm = client.get(parts.path)
    assert warming.status_code == 503 and warming.json()["state"] == "warming up: 0 of 3 projects"
    assert warm.status_code == 200 and warm.json() == {"ready": True, "state": "ready", "down": []}


def _seconds(duration: str) -> int:
    """A compose duration (``1m30s``, ``90s``) in seconds."""
    units = {"h": 3600, "m": 60, "s": 1}
    return sum(int(n) * units[u] for n, u in re.findall(r"(\d+)([hms])", duration))


@pytest.mark.parametrize("service", WORKERS)
def test_a_stopped_worker_gets_its_grace_and_the_margin_before_sigkill(
    service, tmp_path, monkeypatch
):
    """Issue 57 item 1: docker's default 10 s killed a worker mid-job; it needs the grace its
    job may still run and the margin for reaching its next check (app.worker.stopping)."""
    from app.worker.stopping import STOP_MARGIN_S

    for name in [n for n in os.environ if n.startswith("INTENT_STUDIO_")]:
        monkeypatch.delenv(name)
    for name, value in env(service).items():
        monkeypatch.setenv(name, value)
    grace = load_settings(tmp_path).stop_grace
    assert "INTENT_STUDIO_STOP_GRACE" in env(service)  # said where an operator reads it
    assert _seconds(SERVICES[service]["stop_grace_period"]) >= grace + STOP_MARGIN_S


def test_the_app_gets_its_requests_and_model_work_under_way_before_sigkill():
    from app.cli.server import GRACEFUL_S
    from core.encoding.exit_gate import EXIT_WAIT_S

    assert _seconds(SERVICES["app"]["stop_grace_period"]) >= GRACEFUL_S + EXIT_WAIT_S


def _image_tag(image: str) -> str:
    name = image.split("@")[0]
    return name.rpartition(":")[2] if ":" in name.rpartition("/")[2] else ""


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_every_image_is_pinned(service):
    tag = _image_tag(SERVICES[service]["image"])
    assert tag and tag != "latest", f"{service}: {SERVICES[service]['image']}"
    if "minio" in SERVICES[service]["image"]:
        assert tag.startswith("RELEASE.20")  # MinIO's only stable tags are its releases


def _shell_lines() -> list[str]:
    lines = []
    for s in SERVICES.values():
        test = words((s.get("healthcheck") or {}).get("test") or ["NONE"])
        if test[0] == "CMD-SHELL":
            lines.append(" ".join(test[1:]))
        for key in ("entrypoint", "command"):
            run = words(s.get(key) or [])
            if run[:2] == ["sh", "-c"]:
                lines.append(run[2])
    return lines


@pytest.mark.parametrize("line", _shell_lines())
def test_every_shell_line_parses(line):
    assert subprocess.run(["sh", "-n", "-c", line], capture_output=True).returncode == 0, line


def test_the_gpu_worker_is_the_worker_on_a_reserved_gpu_with_torch_s_cuda_build():
    gpu, cpu = SERVICES["worker-gpu"], SERVICES["worker"]
    assert gpu["profiles"] == ["gpu"]  # `up` on a box without one leaves it out
    assert words(gpu["command"]) == words(cpu["command"])
    devices = gpu["deploy"]["resources"]["reservations"]["devices"]
    assert any(d["driver"] == "nvidia" and "gpu" in d["capabilities"] for d in devices)
    assert env("worker-gpu")[ENV_DEVICE] == "cuda"
    assert "/whl/cu" in gpu["build"]["args"]["TORCH_INDEX"]
    assert "/whl/cpu" in cpu["build"]["args"]["TORCH_INDEX"]
    assert gpu["image"] != cpu["image"]  # two builds, two tags


def test_the_tls_front_proxies_to_the_app_which_trusts_only_it():
    proxy = SERVICES["proxy"]
    assert proxy["profiles"] == ["tls"]
    (config,) = proxy["configs"]
    caddyfile = COMPOSE["configs"][config["source"]]["content"]
    assert f"reverse_proxy app:{studio_args('app').port}" in caddyfile
    assert "header_up Host" not in caddyfile  # Caddy passes the client's Host on by default
    address = proxy["networks"]["front"]["ipv4_address"]
    assert env("app")["FORWARDED_ALLOW_IPS"] == address
    assert "front" in SERVICES["app"]["networks"]
    # Plain HTTP reaches the app from this host only: others come through the front.
    assert all(str(p).startswith("127.0.0.1:") for p in SERVICES["app"]["ports"])


def test_docker_compose_reads_the_file():
    """The real loader, where a machine has it (``docker compose`` v2): a key it does not know,
    a bad interpolation or a wrong type fails here."""
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"]).returncode == 0:
        command = ["docker", "compose"]
    elif shutil.which("docker-compose"):
        command = ["docker-compose"]
    else:
        pytest.skip("no docker compose on this machine: the checks above stand in for it")
    profiles = ["--profile", "gpu", "--profile", "tls"]
    run = subprocess.run(
        [*command, "-f", str(ROOT / "compose.yaml"), *profiles, "config", "-q"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
