"""What ``make install`` does once so that the app's first start does not: import the modules
the server, its worker and the encoder load (Python writes their bytecode into the virtual
environment), and compile UMAP's numba kernels (:func:`core.projection.warm_up`). Each step is
said as it starts (``-> …``), which ``.ci/step.py`` repeats while it runs.

    .venv/bin/python -W ignore -m app.cli.prepare [--small-maps]

``--small-maps`` (what ``make test`` asks) compiles only the kernels of maps under
:data:`~core.projection.APPROXIMATE_FROM` points: the tests draw no larger map, and a server
compiles the others only for a project that large (:func:`app.services.design.map_warm_up.
draws_large_maps`), so they would cost the suite about 25 s of a core for nothing.
"""

from __future__ import annotations

import importlib
import sys


def main(argv: list[str] | None = None) -> None:
    small_only = "--small-maps" in (sys.argv[1:] if argv is None else argv)
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
    if small_only:
        return
    print("-> compiling UMAP's kernels for large maps (the longer part)", flush=True)
    warm_up()


if __name__ == "__main__":
    main()
