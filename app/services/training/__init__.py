"""A retrain's whole life, in the order it happens ("what happens after 20 labels?"; the table
in docs/internals.md, *A retrain's life*):

- :mod:`~app.services.training.auto_retrain`: the trigger (what the labels since the last
  retrain weigh, the quiet spell) and the watcher that queues an automatic job;
- :mod:`~app.services.training.retrain_jobs`: a request (validated, queued, followed, cancelled)
  and a job's line in words;
- :mod:`~app.services.training.job_plan`: each phase's planned seconds, read from the phase
  table, and the time left to what the job counts down to;
- :mod:`~app.services.training.retrain`: the pipeline a worker runs for one job, as the named
  phases of one table (:data:`storage.job_phases.PHASES`: snapshot, train, save, measure, serve,
  int8, register, calibrate), with the continuation of the active version
  (:mod:`~app.services.training.retrain_continue`), the anytime checkpoints that serve early
  (:mod:`~app.services.training.retrain_checkpoints`), the measurement on a sample and the
  record (:mod:`~app.services.training.retrain_measure`), the state they hand each other and the
  worker's warm-up;
- :mod:`~app.services.training.serving_now`: what serves now, as the Label and Train tabs say it;
- :mod:`~app.services.training.base_int8`: the base encoder's shared int8 copy;
- then the retention rule (:mod:`app.services.models.retention`, one floor down: the versions
  panel reads it too) keeps the version's files or removes them.

It may import every lower package (labelling, models, design, queue: serving a new version warms
the queue's first card), never :mod:`app.services.projects`.
"""
