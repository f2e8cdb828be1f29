"""Gradio's import-time stub writer is skipped in the app's processes (app/ui/gradio_stubs.py):
Gradio 6 reads, parses and rewrites a ``.pyi`` beside every module that defines a component
class, its own ~80 at each ``import gradio`` (half of the import) and any of ours."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

COMPONENT = '''
import gradio as gr


class Badge(gr.HTML):
    """A component of the test's own."""
'''


def _define_a_component(folder: Path, *, app_first: bool) -> subprocess.CompletedProcess[str]:
    (folder / "badge.py").write_text(COMPONENT, encoding="utf-8")
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(folder)!r})
        {"import app.ui" if app_first else ""}
        import gradio.component_meta as meta
        import badge
        print(meta.create_or_modify_pyi.__module__)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )


def test_a_component_defined_after_the_app_ui_leaves_no_stub_beside_its_module(tmp_path):
    done = _define_a_component(tmp_path, app_first=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["app.ui.gradio_stubs"]
    assert not (tmp_path / "badge.pyi").exists()


def test_without_the_app_gradio_writes_the_stub_this_module_skips(tmp_path):
    """The other side: what the skip stands for still happens in a plain ``import gradio`` (if
    Gradio stops writing stubs, the module above has nothing left to do and can go)."""
    done = _define_a_component(tmp_path, app_first=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["gradio.component_meta"]
    assert (tmp_path / "badge.pyi").exists()
