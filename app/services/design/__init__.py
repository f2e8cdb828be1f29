"""Design aids for the person shaping the intents: conflicts, candidate intents from clusters,
merge/split what-ifs, 2D maps (and their warm-up), the slot book. It may import
:mod:`app.services.labelling` and :mod:`app.services.models`."""
