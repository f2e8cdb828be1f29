"""A project's vectors survive a restart: the encoders encode only what was never encoded (new
or edited texts), a cache file that does not read is rebuilt, never trusted, and a second machine
sharing the model bucket reads them too. ``EmbeddingCache.encoded`` counts the texts the real
encoder encoded."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest

from app.config import Settings
from app.services.labelling.data import label_utterance
from app.services.projects.projects import DEMO_PROJECT, ensure_demo_project
from app.services.queue import queue
from app.serving.state import ServingState
from core.encoding.cache import CachedEncoder
from storage.utterances import list_utterances
from tests.handles import live


def restarted(serving_state: ServingState) -> ServingState:
    """A new process's context on the same data directory (and bucket)."""
    return ServingState.open(serving_state.settings)


def first_card(serving_state: ServingState) -> queue.QueueItem:
    found, _ = queue.next_item(serving_state.live, live(serving_state, DEMO_PROJECT), [])
    assert found is not None
    return found


def encoder_and_texts(serving_state: ServingState) -> tuple[CachedEncoder, list[str]]:
    """The encoder of the demo project's pool and 40 of its pool's texts (the first card encodes
    the pool; test rows are not encoded for it since calibration no longer reads them)."""
    pid = live(serving_state, DEMO_PROJECT).id
    with serving_state.db.session() as s:
        texts = [r.text for r in list_utterances(s, pid, split="train")][:40]
    return serving_state.live.pool(pid).encoder, texts


@pytest.fixture
def project(serving_state):
    ensure_demo_project(serving_state.db)
    return serving_state


def test_a_restart_encodes_none_of_the_texts_encoded_before(project):
    card = first_card(project)
    assert project.live.cache.encoded > 0  # the pool, its calibration and the queue's candidates
    again = restarted(project)
    same = first_card(again)
    assert again.live.cache.encoded == 0
    assert (same.id, same.suggestions) == (card.id, card.suggestions)


def test_an_edited_text_is_encoded_again_and_only_it(project):
    card = first_card(project)
    label_utterance(
        project.db, live(project, DEMO_PROJECT), card.id, None, text=card.text + " please"
    )
    again = restarted(project)
    first_card(again)
    assert again.live.cache.encoded == 1


def test_vectors_read_back_equal_freshly_encoded_ones(project):
    first_card(project)
    again = restarted(project)
    encoder, texts = encoder_and_texts(again)
    cached = again.live.cache.encode(encoder, texts)
    assert again.live.cache.encoded == 0
    np.testing.assert_allclose(cached, encoder.encode(texts), atol=1e-5)


@pytest.mark.parametrize("damage", ["torn", "foreign width", "not a number"])
def test_a_damaged_cache_file_is_rebuilt_never_trusted(project, damage):
    first_card(project)
    shards = sorted(Path(project.settings.cache_dir).rglob("shard-*.npz"))
    assert shards
    for shard in shards:
        if damage == "torn":
            shard.write_bytes(shard.read_bytes()[:200])
        else:
            with np.load(shard, allow_pickle=False) as z:
                keys, vectors = z["keys"], z["vectors"]
            if damage == "foreign width":
                vectors = np.ones((len(keys), 8), dtype=np.float32)
            else:
                vectors = vectors.copy()
                vectors[0, 0] = np.nan
            with shard.open("wb") as fh:
                np.savez(fh, keys=keys, vectors=vectors)
    again = restarted(project)
    first_card(again)
    assert again.live.cache.encoded > 0  # rebuilt
    encoder, texts = encoder_and_texts(again)
    np.testing.assert_allclose(
        again.live.cache.encode(encoder, texts), encoder.encode(texts), atol=1e-5
    )
    third = restarted(again)
    first_card(third)
    assert third.live.cache.encoded == 0  # and the rebuilt files are read


def test_a_second_machine_reads_the_vectors_from_the_model_bucket(tmp_path):
    bucket = f"memory://vectors-test-{uuid.uuid4().hex[:8]}"
    for machine in ("one", "two"):
        (tmp_path / machine).mkdir()
    one = ServingState.open(Settings(data_dir=tmp_path / "one", artifacts_url=bucket))
    ensure_demo_project(one.db)
    first_card(one)
    assert one.live.cache.encoded > 0
    # another machine: its own data directory (no local cache), the same database and bucket
    two = ServingState.open(
        Settings(data_dir=tmp_path / "two", artifacts_url=bucket, db_url=one.settings.database_url)
    )
    first_card(two)
    assert two.live.cache.encoded == 0
    assert list((tmp_path / "two" / "cache").rglob("shard-*.npz"))


def test_a_version_fingerprint_leaves_out_what_a_retrain_adds_after_evaluating(tmp_path):
    from app.serving.int8 import INT8_DIR
    from core.multilabel.head import HEAD_DIR
    from core.training.model_io import DERIVED_DIRS, artifact_sha256

    assert set(DERIVED_DIRS) == {HEAD_DIR, INT8_DIR}
    (tmp_path / "model.safetensors").write_bytes(b"weights")
    before = artifact_sha256(tmp_path, DERIVED_DIRS)
    for folder in DERIVED_DIRS:
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "x.bin").write_bytes(b"added later")
    assert artifact_sha256(tmp_path, DERIVED_DIRS) == before
    assert artifact_sha256(tmp_path) != before
