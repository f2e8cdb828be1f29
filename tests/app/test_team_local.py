"""``make team-local`` (``python -m tests.team_local``) runs compose.yaml's topology on loopback:
one app and two workers on PostgreSQL, Redis and moto's S3. Kept running (``--keep``), it answers
from outside; Ctrl-C (SIGINT to its whole process group, as a terminal sends it) stops every
process it started; the retrain it asked for through REST succeeded on one of the workers, and
every container healthcheck passed against the live processes."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import IO

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a process that still runs (a zombie waiting for its reaper is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _mentioning(text: str) -> list[int]:
    """Running processes whose command line mentions ``text``."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text.encode() in cmdline.read_bytes() and _alive(int(cmdline.parent.name)):
                found.append(int(cmdline.parent.name))
        except OSError:
            continue
    return found


def _pump(stream: IO[str], into: queue.Queue[str]) -> None:
    for line in stream:
        into.put(line)


LOCKED = "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)"


def _make_servers_with_apt_locked(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``make servers`` with PostgreSQL and Redis missing and an ``apt-get`` that fails as apt
    does while another install holds its lock (a file here), logging the calls it takes."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "apt-get"
    fake.write_text(
        "#!/bin/sh\n"
        f'if [ -e "{tmp_path}/lock" ]; then echo "{LOCKED}" >&2; exit 100; fi\n'
        f'echo "$*" >> "{tmp_path}/calls"\n'
    )
    fake.chmod(0o755)
    (tmp_path / "lock").touch()
    environ = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "APT_LOCK_POLL": "0.2"}
    proc = subprocess.Popen(
        ["make", "--no-print-directory", "servers", "PG_INITDB=", "REDIS_SERVER="],
        cwd=ROOT,
        env={**environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if "APT_LOCK_WAIT" not in env:  # the other install ends a moment later
        time.sleep(1.5)
        (tmp_path / "lock").unlink()
    out, _ = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out)


def test_make_servers_waits_for_another_installs_apt_lock(tmp_path):
    """Issue 45, row 12: ``make team-local`` (through ``make servers``) exited at once when
    another package install held apt's lock. It waits for the lock, then installs."""
    done = _make_servers_with_apt_locked(tmp_path)
    assert done.returncode == 0, done.stdout
    assert "waiting for another package install" in done.stdout
    calls = (tmp_path / "calls").read_text().splitlines()
    assert [c.split()[2:] for c in calls] == [  # after "-o DPkg::Lock::Timeout=N"
        ["update", "-qq"],
        ["install", "-y", "-qq", "postgresql", "redis-server"],
    ]


def test_make_servers_says_at_once_that_it_waits_for_apt_s_lock_while_apt_waits(tmp_path):
    """Issue 57 item 8: apt >= 1.9.11 waits for dpkg's lock itself (``DPkg::Lock::Timeout``);
    with its output captured, ``make team-local`` printed nothing for up to ten minutes."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "apt-get"  # waits for the lock as apt does, up to its timeout, then fails
    fake.write_text(
        "#!/bin/sh\n"
        "wait=$(echo \"$*\" | sed -n 's/.*DPkg::Lock::Timeout=\\([0-9]*\\).*/\\1/p')\n"
        "end=$(( $(date +%s) + ${wait:-0} ))\n"
        f'while [ -e "{tmp_path}/lock" ] && [ "$(date +%s)" -lt "$end" ]; do sleep 0.1; done\n'
        f'if [ -e "{tmp_path}/lock" ]; then echo "{LOCKED}" >&2; exit 100; fi\n'
        f'echo "$*" >> "{tmp_path}/calls"\n'
    )
    fake.chmod(0o755)
    (tmp_path / "lock").touch()
    proc = subprocess.Popen(
        ["make", "--no-print-directory", "servers", "PG_INITDB=", "REDIS_SERVER="],
        cwd=ROOT,
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
    try:
        said = lines.get(timeout=15)  # within one poll of apt's own wait, lock still held
        assert "waiting for another package install (process 4242 (apt-get))" in said, said
        (tmp_path / "lock").unlink()
        assert proc.wait(60) == 0
    finally:
        (tmp_path / "lock").unlink(missing_ok=True)  # a fake apt still waiting ends too
        if proc.poll() is None:
            proc.kill()
    assert len((tmp_path / "calls").read_text().splitlines()) == 2  # update, install


def test_make_servers_gives_up_on_apt_lock_after_its_limit(tmp_path):
    started = time.monotonic()
    done = _make_servers_with_apt_locked(tmp_path, APT_LOCK_WAIT="1")
    assert 1 <= time.monotonic() - started < 30
    assert "still locked by another package install after 1 s" in done.stdout
    assert "the team tests will be skipped" in done.stdout
    assert not (tmp_path / "calls").exists()


def test_team_local_retrains_through_rest_and_ctrl_c_stops_every_process(tmp_path):
    summary_file = tmp_path / "summary.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.team_local", "--keep", "--json", str(summary_file)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    reader = threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True)
    reader.start()
    seen: list[str] = []
    deadline = time.monotonic() + 420
    try:
        while not seen or "Ctrl-C stops everything" not in seen[-1]:
            assert time.monotonic() < deadline, "".join(seen)
            try:
                seen.append(lines.get(timeout=1))
            except queue.Empty:
                if proc.poll() is not None:
                    break
        if proc.poll() == 2 and "team-local: " in "".join(seen):  # a server program is missing
            pytest.skip("".join(seen).strip())
        assert proc.poll() is None, "".join(seen)
        (base,) = re.findall(r"Running: (http://127\.0\.0\.1:\d+)", "".join(seen))
        with urllib.request.urlopen(f"{base}/api/v1/health", timeout=10) as answer:
            health = json.load(answer)  # still up, reached from outside, every server answers
        assert health["ok"] and health["ready"] and health["down"] == [], health
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C
        try:
            # each of the app and the two workers may take its SIGTERM's 20 s and a SIGKILL's
            # 10 s before PostgreSQL, Redis and moto stop (tests/team_local.py); a loaded box
            # once took over 120 s in all
            status = proc.wait(240)
        except subprocess.TimeoutExpired:
            # SIGTERM, which team-local takes as Ctrl-C and which stops the app and workers
            # in their own process groups too (SIGKILL only to what is left of its own)
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
            said = "".join(seen) + "".join(lines.get() for _ in range(lines.qsize()))
            pytest.fail(f"Ctrl-C did not stop team-local within 240 s:\n{said}")
    reader.join(30)
    output = "".join(seen) + "".join(lines.get() for _ in range(lines.qsize()))
    assert status == 0, output
    assert "Stopped everything" in output

    summary = json.loads(summary_file.read_text())
    assert summary["job"]["status"] == "succeeded", output
    assert summary["worker"] in ("worker-1", "worker-2")
    assert summary["version"]["version"] == summary["job"]["model_version_id"]
    assert summary["version"]["active"]
    assert summary["prediction"]["predictions"][0]["labels"] == ["refund"]
    assert summary["healthchecks"] == {"app": 0, "worker-1": 0, "worker-2": 0}
    # the app, both workers, PostgreSQL, Redis and moto: all gone, and their folder too
    assert len(summary["pids"]) >= 6
    assert [pid for pid in summary["pids"] if _alive(pid)] == []
    assert _mentioning(summary["root"]) == []
    assert not Path(summary["root"]).exists()
