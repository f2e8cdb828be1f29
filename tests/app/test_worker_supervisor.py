"""The training worker that ``serve`` supervises does not outlive the server.

A server killed with ``kill -9`` cannot stop its child; the child watches the server's pid and
stops gracefully (after the job it runs) once the server is gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from app.config import load_settings
from app.worker import ENV_PARENT_PID

SERVER = textwrap.dedent(
    """
    import sys, time
    from app.config import load_settings
    from app.worker import WorkerSupervisor

    supervisor = WorkerSupervisor(load_settings(sys.argv[1]))
    supervisor.start()
    print(supervisor.pid, flush=True)
    time.sleep(600)
    """
)


def _gone(pid: int) -> bool:
    """True once ``pid`` has exited (a zombie nobody reaped counts as exited)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _wait(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def test_the_worker_stops_when_its_server_is_killed(tmp_path):
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop(ENV_PARENT_PID, None)
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(tmp_path)], stdout=subprocess.PIPE, env=env, cwd=root
    )
    worker = 0
    try:
        assert server.stdout is not None
        worker = int(server.stdout.readline())
        log = tmp_path / "worker.log"
        # The worker is up (its queue is open, the parent watch starts next) and stays up while
        # its server lives.
        queue = load_settings(tmp_path).queue_path
        assert _wait(queue.exists, 90), log.read_text()
        time.sleep(3)
        assert not _gone(worker), log.read_text()

        server.send_signal(signal.SIGKILL)
        server.wait(10)
        assert _wait(lambda: _gone(worker), 30), log.read_text()
        assert "is gone" in log.read_text()
    finally:
        if server.poll() is None:
            server.kill()
        if worker and not _gone(worker):
            os.kill(worker, signal.SIGKILL)
