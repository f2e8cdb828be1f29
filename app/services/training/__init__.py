"""The retrain pipeline a worker runs for one job, as named phases (snapshot, train, measure,
serve, register, int8) with the state they hand each other, and the worker's warm-up. A top floor:
it may import every lower package (labelling, models, design, queue: serving a new version warms
the queue's first card), never :mod:`app.services.projects`."""
