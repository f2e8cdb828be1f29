"""The Map's projecting process (:class:`app.serving.map_store.Projector`): UMAP runs in a
child, so its numba epochs never hold the server's GIL; the child answers what the same call in
this process answers, says what was wrong with a bad request, comes back after it died, and
ends with its input."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest

from app.serving.map_store import Projector, ProjectorError
from core.projection import project


@pytest.fixture(scope="module")
def projector():
    p = Projector()
    yield p
    p.close()


def _vectors(n: int = 60) -> np.ndarray:
    centres = np.random.default_rng(1).normal(size=(3, 16))
    noise = np.random.default_rng(2).normal(scale=0.1, size=(n, 16))
    return (centres[np.arange(n) % 3] + noise).astype(np.float32)


def test_the_child_projects_what_this_process_would(projector):
    vectors = _vectors()
    points = projector.project(vectors, "umap")
    assert points.dtype == np.float32 and points.shape == (len(vectors), 2)
    assert np.allclose(points, project(vectors, "umap"), atol=1e-4)  # same seed, same map
    child = projector._proc
    assert child is not None and child.pid != os.getpid() and child.poll() is None


def test_a_bad_request_is_refused_with_its_reason_and_the_child_goes_on(projector):
    with pytest.raises(ProjectorError, match="Unknown projection method 'mds'"):
        projector.project(_vectors(), "mds")
    assert projector.project(_vectors(), "pca").shape == (60, 2)


def test_a_child_that_died_is_started_again(projector):
    projector.project(_vectors(), "pca")
    first = projector._proc
    assert first is not None
    os.kill(first.pid, signal.SIGKILL)
    first.wait(10)
    assert projector.project(_vectors(), "pca").shape == (60, 2)
    assert projector._proc is not None and projector._proc.pid != first.pid


def test_a_terminals_ctrl_c_leaves_the_child_to_its_server(projector):
    """Ctrl+C in the terminal of ``serve`` reaches every process of its group: the child died
    of it with a KeyboardInterrupt traceback on the server's terminal, before the server had
    begun to stop. It goes on answering; it ends with its input, when its server is done."""
    projector.project(_vectors(), "pca")
    child = projector._proc
    assert child is not None
    os.kill(child.pid, signal.SIGINT)
    assert projector.project(_vectors(), "pca").shape == (60, 2)
    assert projector._proc is child and child.poll() is None


def test_the_child_ends_when_its_input_ends(projector):
    """What ``kill -9`` of the server does to the child: the pipe's other end closes, and the
    child, idle, ends at once (no projecting process outlives its server)."""
    projector.project(_vectors(), "pca")
    child = projector._proc
    assert child is not None and child.stdin is not None
    child.stdin.close()
    assert child.wait(10) == 0


PARENT = """
import sys, time
import numpy as np
from app.serving.map_store import Projector

projector = Projector()
projector.project(np.zeros((4, 2), dtype=np.float32), "pca")  # started
print(projector._proc.pid, flush=True)
v = np.random.default_rng(0).normal(size=(3000, 16)).astype(np.float32)
projector.project(v, "tsne")  # about 10 s of the child's on a 2-core machine
"""


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (an exited process its new parent has not reaped yet does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_the_child_of_a_killed_server_ends_in_the_middle_of_a_request():
    """A server killed while its child computes (a warm-up's compilation, a large map) left the
    child computing until the request was done, its answer read by nobody."""
    import subprocess
    import sys
    import time

    from tests.conftest import ROOT

    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        time.sleep(1.5)  # the t-SNE under way
        assert _running(child)
    finally:
        parent.kill()
        parent.wait(10)
    deadline = time.monotonic() + 4
    while _running(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(child), "the child outlived its parent"
