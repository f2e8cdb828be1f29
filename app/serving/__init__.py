"""What serves a project's predictions: the pieces :class:`app.serving.state.ServingState` holds
(docs/internals.md, "The serving state", says what each guarantees, which locks it takes and who
takes which; a function takes the smallest piece that holds what it uses).

- :mod:`app.serving.int8`: the rule that picks the encoder a version serves with (its int8 ONNX
  copy when the copy passed parity and the project allows it, else fp32) and what it records;
- :mod:`app.serving.models`: the encoders, int8 copies and heads a process has loaded;
- :mod:`app.serving.factories`: the one builder of a project's Predictor factories;
- :mod:`app.serving.live`: the live pools, their background calibration and head fits, and the
  start-up warm-up;
- :mod:`app.serving.state`: :class:`~app.serving.state.ServingState`, which holds one of each;
- :mod:`app.serving.pools`, :mod:`app.serving.pool_heads`: a project's pool and its head fitter;
- :mod:`app.serving.vectors`: the embedding cache a process opens;
- :mod:`app.serving.eval_memo`: evaluations of an unchanged version on unchanged rows, kept
  (the factory builder holds them);
- :mod:`app.serving.admission`: the per-call, per-user and queue limits of predictions (the
  live pools hold them);
- :mod:`app.serving.map_store`: the maps a process draws, their files and projecting process;
- :mod:`app.serving.training_queue`: the training jobs as requests see them.
"""
