"""Benchmarks: scripts that measure the product's speed and accuracy and print a table and JSON.

Not timed tests: run each from the repository root as a module, e.g. ``python -m bench.knn``
(``python -m bench.<name> --help`` for its options); data comes from ``../shared/data`` by
default, results land in ``bench/results/`` (ignored by git) and the numbers, beside the peer's
(the commit before the change) from the same run, go into ``bench/RESULTS.md``.
``bench/experiments/`` holds the options that lost and left the product.
"""
