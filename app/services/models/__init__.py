"""Models: a project's model versions, the base encoder it trains and serves, retrain requests
(validate, queue, follow, cancel) and their plan, evaluation through the one contract, the int8
copy, and predictions explained by neighbours. It may import :mod:`app.services.labelling` only."""
