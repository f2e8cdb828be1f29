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
