"""Generated downloads (reports, bundles, exports) are swept: a TTL, then a total size cap."""

from __future__ import annotations

import os
import time

from app.config import load_settings
from app.services.projects.downloads import TTL_S, download_path, new_download, sweep


def _file(folder, name, size, age_s):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    then = time.time() - age_s
    os.utime(path.parent if path.parent != folder else path, (then, then))
    return path


def test_sweep_removes_what_is_older_than_the_ttl(tmp_path):
    old = _file(tmp_path, "dl-old/report.html", 10, age_s=TTL_S + 60)
    new = _file(tmp_path, "dl-new/report.html", 10, age_s=60)
    assert sweep(tmp_path) == [old.parent]
    assert not old.parent.exists() and new.exists()


def test_sweep_keeps_the_total_under_the_cap_removing_the_oldest_first(tmp_path):
    a = _file(tmp_path, "a.html", 400, age_s=300)
    b = _file(tmp_path, "b.html", 400, age_s=200)
    c = _file(tmp_path, "c.html", 400, age_s=100)
    assert sweep(tmp_path, max_bytes=900) == [a]
    assert sweep(tmp_path, max_bytes=100) == [b, c]
    assert list(tmp_path.iterdir()) == []


def test_a_new_download_sweeps_then_gets_a_fresh_folder(tmp_path):
    stale = _file(tmp_path, "dl-1/shop.zip", 10, age_s=TTL_S + 1)
    first = new_download(tmp_path, "shop.zip")
    first.write_bytes(b"zip")
    second = new_download(tmp_path, "shop.zip")
    assert not stale.parent.exists()
    assert first.exists() and first.parent != second.parent  # same name, no clash
    assert first.parent.parent == second.parent.parent == tmp_path


def test_ten_reports_of_5_mb_leave_at_most_the_cap(tmp_path):
    folder = tmp_path / "dl"
    for i in range(10):
        path = new_download(folder, f"r{i}.html")
        path.write_bytes(b"x" * 5_000_000)
        # older ones first: a second apart
        os.utime(path.parent, (time.time() - 100 + i, time.time() - 100 + i))
    sweep(folder, max_bytes=12_000_000)
    kept = sorted(p.name for p in folder.rglob("*.html"))
    assert kept == ["r8.html", "r9.html"]


def test_download_path_also_sweeps_the_reports_older_versions_left(tmp_path):
    settings = load_settings(tmp_path / "data")
    legacy = _file(settings.data_dir / "reports", "shop-v1.html", 10, age_s=TTL_S + 5)
    recent = _file(settings.data_dir / "reports", "shop-v2.html", 10, age_s=5)
    path = download_path(settings, "shop.html")
    assert path.parent.parent == settings.data_dir / "downloads"
    assert not legacy.exists() and recent.exists()
