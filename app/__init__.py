"""The Gradio UI, the CLI, background jobs, and the service functions joining storage and core."""

from __future__ import annotations

import os

# torch's OpenMP threads wait for work by spinning (libgomp's default) unless told otherwise.
# The app's server and its worker share the machine's cores with each other (and, on a small
# box, with whatever else runs): a spinning thread then burns the core another process needs.
# On the shared 2-core machine, encoding 1,000 utterances with 2 threads took 38.7 s (25.3 s
# of CPU) spinning and 4.6 s (4.1 s of CPU) with passive waiting (bench/RESULTS.md, issue 44).
# Set before any entry point imports torch (every one imports this package first); a value
# already in the environment wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# numpy's OpenBLAS does the same with the thread it adds beside the caller's: after each product
# it spins for about 0.1 s, so the server's small products (a key's k-NN scores, a pool's
# calibration, the queue's margins, each under a millisecond) kept a second core busy: a loop of
# 154x616 products, 5 every 50 ms, took 5.2 s of CPU in 5 s with it and 0.33 s on one thread,
# and a server answering an annotator's keys used 27 s of CPU in 90 s instead of 45-49
# (bench/beside_retrain.py, issue 71 item 5). One thread; read when numpy loads, so here too.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__all__: list[str] = []
