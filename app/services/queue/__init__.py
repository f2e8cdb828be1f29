"""The labelling queue: one unlabelled utterance at a time in the annotator's order (uncertainty,
conflicts, team assignments) and its answers, one transaction a key press. It may import
:mod:`app.services.labelling`, :mod:`app.services.models` and :mod:`app.services.design`."""
