"""The phases of a retrain, once (issue 67 item 2): the order they run in, what a job's row says
while each runs (``TrainingJob.phase``), the function of the retrain pipeline that runs it
(:mod:`app.services.training.retrain`), what the Train tab calls it, whether its progress is
counted (a step of so many), and whether a cancel of a job whose version serves already stops
it (the version serving on). The job's row, the progress bar and its time left
(:mod:`app.services.training.job_plan`), the CLI's and REST's words for a job, the anytime
retrain's checkpoints and ``bench/job_profile.py`` all read this table."""

from __future__ import annotations

from typing import NamedTuple


class Phase(NamedTuple):
    job: str  # what the job's row says while it runs (TrainingJob.phase)
    step: str  # the pipeline's function that runs it (app.services.training.retrain)
    title: str  # what the Train tab calls it
    counted: bool  # its progress is a count (steps, utterances, held-out steps)
    stoppable: bool  # a cancel once the version serves stops it; the version serves on


# In the order they run. The new version answers from ``serving`` on; on a CPU its int8 copy is
# built after; where the project's calibration is held-out, its held-out encoders run last.
# ``saving``, ``evaluating`` and ``serving`` run once per checkpoint, within ``training``; the
# version's record (``registering``) is never cut short.
PHASES = (
    Phase("preparing", "snapshot", "Preparing the data", False, False),
    Phase("training", "train", "Training", True, True),
    Phase("saving", "save", "Saving the model", False, True),
    Phase("evaluating", "measure", "Evaluating", True, True),
    Phase("serving", "serve", "Serving the new version", False, True),
    Phase(
        "int8", "int8", "Checking its int8 copy (the new version answers meanwhile)", False, True
    ),
    Phase("registering", "register", "Recording the version", False, False),
    Phase(
        "calibrating",
        "calibrate",
        "Calibrating out of scope on held-out encoders (the new version answers meanwhile)",
        True,
        True,
    ),
)
BY_JOB = {p.job: p for p in PHASES}
PREPARING, TRAINING, SAVING, EVALUATING, SERVING, INT8, REGISTERING, CALIBRATING = (
    p.job for p in PHASES
)
