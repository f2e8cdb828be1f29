"""The phases of a retrain, once (issue 67 item 2): the order they run in, what a job's row says
while each runs (``TrainingJob.phase``), the function of the retrain pipeline that runs it
(:mod:`app.services.training.retrain`), what the Train tab calls it, whether its progress is
counted (a step of so many), whether a cancel of a job whose version serves already stops
it (the version serving on), and its planned seconds: once per stretch, and per item it works
on (issue 76 item 1). The job's row, the progress bar and its time left
(:mod:`app.services.training.job_plan`, which multiplies the rates by the job's sizes), the
CLI's and REST's words for a job, the anytime retrain's checkpoints and ``bench/job_profile.py``
all read this table."""

from __future__ import annotations

from typing import NamedTuple


class Phase(NamedTuple):
    job: str  # what the job's row says while it runs (TrainingJob.phase)
    step: str  # the pipeline's function that runs it (app.services.training.retrain)
    title: str  # what the Train tab calls it
    counted: bool  # its progress is a count (steps, utterances, held-out steps)
    stoppable: bool  # a cancel once the version serves stops it; the version serves on
    seconds: float  # planned seconds once per stretch of it (loading, writing, exporting)
    per_item: float  # planned seconds per item it works on (see each row)


# The planned seconds, from the CPU seconds of the two "new" BANKING77 retrains in
# bench/RESULTS.md (issue 44, "After": python -m bench.job_profile; 770 train and 3,078 test
# utterances, the default recipe's 101 steps of 32, int8 on, 1,770 parity encodes): the phases
# weigh what they did there; how fast this machine is comes from the job itself.
PAIR = 0.6 / 32  # one training pair: 55.7 and 65.9 s for 101 steps of 32 pairs
UTTERANCE = 0.005  # one utterance encoded: the new encoder's 3,848 utterances in 17.3, 19.3 s

# In the order they run. The new version answers from ``serving`` on; on a CPU its int8 copy is
# built after; where the project's calibration is held-out, its held-out encoders run last.
# ``saving``, ``evaluating`` and ``serving`` run once per checkpoint, within ``training``; the
# version's record (``registering``) is never cut short.
PHASES = (
    # the snapshot 0.3 s, the base encoder's load 4.2-4.5 s
    Phase("preparing", "snapshot", "Preparing the data", False, False, 5.0, 0.0),
    # per pair of the stretch's steps
    Phase("training", "train", "Training", True, True, 0.0, PAIR),
    # written, and read back as the encoder to evaluate
    Phase("saving", "save", "Saving the model", False, True, 1.0, 0.0),
    # per utterance an encoder still has to encode
    Phase("evaluating", "measure", "Evaluating", True, True, 0.0, UTTERANCE),
    # registration 0.2 s, the first card's vectors without unlabelled rows 0.3-0.4 s; per
    # unlabelled utterance the first card needs, where this version's space stays (no int8
    # copy): counted, those utterances (its time left measured, not planned)
    Phase("serving", "serve", "Serving the new version", True, True, 0.9, UTTERANCE),
    # the ONNX export and its quantisation 2.9, 2.5 s; per parity question (1,770 int8 encodes
    # and their ranking: 8.9, 8.6 s)
    Phase(
        "int8",
        "int8",
        "Checking its int8 copy (the new version answers meanwhile)",
        False,
        True,
        2.7,
        UTTERANCE,
    ),
    # the version's record completed (its int8 copy switched in); per unlabelled utterance the
    # first card needs in the int8 copy's space: counted, those utterances (on 2 cores beside a
    # server moving to the new space they took twice the plan's time, said "about 0 s" for 8 s)
    Phase("registering", "register", "Recording the version", True, False, 0.3, UTTERANCE),
    # per pair of the held-out encoders' steps (their utterances encode at evaluating's rate)
    Phase(
        "calibrating",
        "calibrate",
        "Calibrating out of scope on held-out encoders (the new version answers meanwhile)",
        True,
        True,
        0.0,
        PAIR,
    ),
)
BY_JOB = {p.job: p for p in PHASES}
PREPARING, TRAINING, SAVING, EVALUATING, SERVING, INT8, REGISTERING, CALIBRATING = (
    p.job for p in PHASES
)
