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

__all__: list[str] = []
