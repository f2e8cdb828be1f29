"""The retrain pipeline a worker runs for one job, as the named phases of one table
(:data:`storage.job_phases.PHASES`: snapshot, train, save, measure, serve, int8, register,
calibrate), the continuation of the active version, the state they hand each other, and the
worker's warm-up. A top floor:
it may import every lower package (labelling, models, design, queue: serving a new version warms
the queue's first card), never :mod:`app.services.projects`."""
