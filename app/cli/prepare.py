"""What ``make install`` does once so that the app's first start does not: import the modules
the server, its worker and the encoder load (Python writes their bytecode into the virtual
environment), and compile UMAP's numba kernels (:func:`core.projection.warm_up`). Each step is
said as it starts (``-> …``), which ``.ci/step.py`` repeats while it runs.

    .venv/bin/python -W ignore -m app.cli.prepare
"""

from __future__ import annotations

import importlib


def main() -> None:
    for module, what in (
        ("app.web", "the web app"),
        ("app.worker", "the training worker"),
        ("sentence_transformers", "the sentence encoder's library"),
    ):
        print(f"-> importing {what} (Python compiles each module once)", flush=True)
        importlib.import_module(module)
    from core.projection import warm_up

    print("-> compiling UMAP's kernels for small maps", flush=True)
    warm_up(large=False)
    print("-> compiling UMAP's kernels for large maps (the longer part)", flush=True)
    warm_up()


if __name__ == "__main__":
    main()
