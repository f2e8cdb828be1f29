"""Issue 73, item 2: the data directory was world-readable (the folder 0755, ``studio.db``, its
WAL and ``queue.db`` 0644, model files alike): another account of the machine read a private
project's rows and every password hash with ``sqlite3``. Now the data directory and everything
the app writes in it (the database and its WAL, the queue, model files, downloads, a backup, a
restore) are the app's account's alone, whatever the umask the app was started with, and the
app says at start when it finds its data readable by others."""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.cli import main
from tests.app.live import free_port

pytestmark = pytest.mark.slow


def opened_to_others(root: Path) -> list[str]:
    """Every folder and file under ``root`` (``root`` too) that another account may enter or
    read, with its mode."""
    found = []
    for path in [root, *root.rglob("*")]:
        mode = path.lstat().st_mode
        if not stat.S_ISLNK(mode) and mode & 0o077:
            found.append(f"{path.relative_to(root.parent)} {stat.S_IMODE(mode):04o}")
    return found


@pytest.fixture
def loose_umask():
    """The process starts as most shells start it (022: files 0644, folders 0755)."""
    before = os.umask(0o022)
    yield
    os.umask(before)


def test_a_fresh_data_directory_and_all_the_app_writes_are_private(tmp_path, loose_umask):
    data = tmp_path / "data"
    d = ["--data-dir", str(data)]
    rows = tmp_path / "rows.csv"
    rows.write_text(
        "text,label\n"
        + "".join(
            f"where is my parcel {i},track_order\nrefund order {i},refund\n" for i in range(6)
        )
    )
    assert main([*d, "import", str(rows), "--project", "shop"]) == 0
    assert main([*d, "train", "--project", "shop", "--set", "epochs=1"]) == 0
    assert main([*d, "report", "--project", "shop", "--static"]) == 0  # into downloads/
    files = {p.name for p in data.rglob("*") if p.is_file()}
    assert "studio.db" in files and any(p.suffix == ".safetensors" for p in data.rglob("*")), files
    assert opened_to_others(data) == []
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert os.umask(0o022) == 0o022  # the caller's umask is its own again after the command

    backup = tmp_path / "backups" / "studio.tar.gz"
    assert main([*d, "backup", "--output", str(backup)]) == 0
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600  # it holds the database
    restored = tmp_path / "restored"
    assert main(["--data-dir", str(restored), "restore", str(backup)]) == 0
    assert opened_to_others(restored) == []


def test_the_data_directory_is_created_private_whatever_the_umask(tmp_path, loose_umask):
    from app.config import load_settings

    settings = load_settings(tmp_path / "new" / "data")
    assert stat.S_IMODE(settings.data_dir.stat().st_mode) == 0o700


def test_serve_says_at_start_that_others_may_read_its_data(tmp_path):
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    data.chmod(0o755)
    (data / "studio.db").touch()
    (data / "studio.db").chmod(0o644)
    port = free_port()
    command = [sys.executable, "-m", "app", "--data-dir", str(data), "serve"]
    server = subprocess.Popen(
        [*command, "--port", str(port), "--no-worker", "--no-demo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    said: list[str] = []
    try:
        deadline = time.monotonic() + 240
        assert server.stdout is not None
        while time.monotonic() < deadline:
            line = server.stdout.readline()
            if not line:
                break
            said.append(line)
            if line.startswith("Intent Studio on http"):
                break
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
    text = "".join(said)
    warned = [line for line in said if "readable by other accounts" in line]
    assert len(warned) == 2, text  # one log line, and one line of serve's own output
    assert "the folder 0755" in warned[0] and "studio.db 0644" in warned[0]
    assert re.search(rf"chmod -R go-rwx {re.escape(str(data))}", warned[0])
    assert stat.S_IMODE(data.stat().st_mode) == 0o755  # said, not changed behind its back


def test_a_backup_and_a_restore_are_private_when_called_without_the_command(tmp_path, loose_umask):
    """The service itself (a bench, a script calling it): the archive holds the database, and a
    restore writes it into a data directory, whatever umask the caller runs with."""
    from app.config import load_settings
    from app.services.projects.backup import backup_deployment, restore_deployment
    from app.services.projects.projects import new_project
    from app.serving.state import ServingState

    source = load_settings(tmp_path / "data")
    serving_state = ServingState.open(source)
    try:
        new_project(serving_state.db, "shop")
    finally:
        serving_state.close()
    (source.data_dir / "artifacts" / "v1").mkdir(parents=True)
    (source.data_dir / "artifacts" / "v1" / "model.bin").write_bytes(b"weights")
    archive = tmp_path / "out" / "studio.tar.gz"
    backup_deployment(source, archive)
    assert stat.S_IMODE(archive.stat().st_mode) == 0o600
    restored = load_settings(tmp_path / "restored")
    restore_deployment(archive, restored)
    assert (restored.data_dir / "artifacts" / "v1" / "model.bin").read_bytes() == b"weights"
    assert opened_to_others(restored.data_dir) == []
