"""Models: a project's model versions and their files (what the retention rule keeps, the disk
they use), the base encoder it trains and serves, evaluation through the one contract, the int8
copy, and predictions explained by neighbours. It may import :mod:`app.services.labelling` only.
A retrain's life, from the labels that trigger it to the version it leaves, is
:mod:`app.services.training`."""
