"""Gradio without its import-time stub writer.

Gradio 6 defines each of its ~80 component classes through a metaclass that, for every class,
reads the class's source file, parses it twice and compares it with the ``.pyi`` beside it,
writing the stub when they differ (``gradio.component_meta.create_or_modify_pyi``): half of
``import gradio`` (about 1.5 s of the 3 s on a 2-core Xeon with AVX-512 BF16), paid by every
start of the server, and a write into the installed library or beside any module that defines
a component. The stubs are for editors and type checkers; the wheel ships them.

:func:`install` makes that step do nothing for this process. It must run before ``gradio`` is
first imported: ``app/ui/__init__.py`` calls it, and every module that imports gradio lives
under ``app/ui``. A Gradio without the function imports as it did (nothing to skip).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

MODULE = "gradio.component_meta"


def _no_stub(*_args: object, **_kwargs: object) -> None:
    """What Gradio's metaclass calls instead of writing a component's stub."""


def _skip(meta: ModuleType) -> None:
    """Swap the stub writer of a loaded ``gradio.component_meta`` (a Gradio without one: kept)."""
    if hasattr(meta, "create_or_modify_pyi"):
        meta.create_or_modify_pyi = _no_stub  # type: ignore[attr-defined]


class _SkipStubs(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``gradio.component_meta`` as Python would, runs it, then swaps the stub writer
    before any component class is defined (they are defined after this module is loaded)."""

    def __init__(self) -> None:
        self._loader: importlib.abc.Loader | None = None

    def find_spec(self, fullname, path, target=None):  # type: ignore[no-untyped-def]
        if fullname != MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None:
            return spec
        self._loader = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec):  # type: ignore[no-untyped-def]
        assert self._loader is not None
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        assert self._loader is not None
        self._loader.exec_module(module)
        _skip(module)


def install() -> None:
    """Skip the stub writer in this process (once; harmless when gradio is already loaded)."""
    if MODULE in sys.modules:
        _skip(sys.modules[MODULE])
    elif not any(isinstance(finder, _SkipStubs) for finder in sys.meta_path):
        sys.meta_path.insert(0, _SkipStubs())
