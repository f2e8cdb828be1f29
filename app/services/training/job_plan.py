"""One bar for a whole retrain, and an honest time left: the job's phases in order, each a share
of the job as long as it is expected to take, so the share done only grows from the first phase
to the last.

A phase's weight is its expected seconds: what it has to do, counted before training starts
(optimiser steps and their size, utterances each encoder still has to encode, the parity
check's questions, the unlabelled utterances the first card needs), times the seconds one unit
took in a measured retrain: each phase's row of the one phase table
(:data:`storage.job_phases.PHASES`: its seconds once per stretch, and per item it works on),
from bench/RESULTS.md's job profile. Only the ratios between phases matter: how fast this
machine is comes from the job itself.

Within a counted phase (``training``, ``evaluating``) the share follows its count; within the
others it follows the time spent in it against the time it should take at the job's pace
(:meth:`JobPlan.by_time`), approaching its end without passing it, so the bar moves through a
phase nobody counts (the int8 parity check) and still never goes back.

The time left (:class:`Tracker`, which the worker reads once a second) is the running phase's
rest, from its own measured rate where it is counted, plus the phases after it, each at the pace
its kind kept so far (training's optimiser steps, or the other phases' encoding: a box slow to
train is not slow to encode), or the whole job's before that kind has run. There is none before
:data:`ETA_FROM_SHARE` of the job is done and :data:`ETA_FROM_SECONDS` have passed
("estimating…"), none in a counted phase until its own steps are timed
(:class:`core.training.Eta`: the plan's guess said "about 2 min left" of a training at 87 s a
step, 2.4 h, issue 65), and none once a phase without a count has run well past the time it
should take ("longer than planned"): a number would be a guess that stays put while the time
goes by.

Example:
    >>> plan = JobPlan.estimate(steps=100, batch_size=32, to_evaluate=1_000, parity=0)
    >>> plan.share("training", 50, 100) < plan.share("evaluating", 0, 1_000)
    True
    >>> round(plan.share("registering", 1, 1), 2)
    1.0
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from storage import job_phases
from storage.job_phases import (
    CALIBRATING,
    EVALUATING,
    INT8,
    PREPARING,
    REGISTERING,
    SAVING,
    SERVING,
    TRAINING,
)
from storage.job_phases import PHASES as JOB_PHASES

# The phases of a retrain in the order they run, what the Train tab calls each, and those whose
# progress is counted: storage.job_phases's one table.
PHASES = tuple(p.job for p in JOB_PHASES)
PHASE_NAMES = {p.job: p.title for p in JOB_PHASES}
COUNTED = tuple(p.job for p in JOB_PHASES if p.counted)
# The time left is said once the job has done this share of its work and run this long: before,
# one-off costs (loading the model, the first steps) are most of what was timed.
ETA_FROM_SHARE = 0.05
ETA_FROM_SECONDS = 10.0
# The phases whose seconds are optimiser steps; the others' are mostly utterances encoded. Each
# kind's stretches to come are timed at the pace that kind kept so far, once this many of its
# planned seconds have run (before: the whole job's pace): a box that trains 3x slower than the
# plan's still encodes at its pace (bench.load at 3,078 questions, Xeon without AMX: "about 49 s
# to the end" as the int8 copy began, 26 s before it, at the training's pace).
TRAINS = (TRAINING, CALIBRATING)
PACE_AFTER = 3.0
# A phase without a count is overdue (no time left is said) past this many times the seconds it
# should take, plus a few seconds.
OVERDUE_AFTER = 1.2


@dataclass(frozen=True)
class Segment:
    """One stretch of a job in its plan: a phase, its expected seconds, and for a training
    stretch the steps of the whole run it covers (``steps``: first, last; an anytime retrain
    trains its first pass, then the rest, with a checkpoint's saving, evaluating and serving
    between them)."""

    phase: str
    seconds: float
    steps: tuple[int, int] | None = None


@dataclass(frozen=True)
class JobPlan:
    """The job's stretches in order, each with its expected seconds (only their ratios are
    used); a phase the job skips weighs nothing. A phase named where a stretch is expected
    means its first stretch."""

    segments: tuple[Segment, ...]

    @classmethod
    def of(cls, seconds: Mapping[str, float]) -> JobPlan:
        """A plan of one stretch per phase, in :data:`PHASES`' order."""
        return cls(tuple(Segment(p, float(seconds[p])) for p in PHASES if p in seconds))

    @classmethod
    def estimate(
        cls,
        *,
        steps: int,
        batch_size: int,
        to_evaluate: int,
        parity: int,
        unlabelled: int = 0,
        held_out_steps: int = 0,
        held_out_texts: int = 0,
        checkpoints: Sequence[int] = (),
        later_evaluate: int = 0,
        recorded: int = 0,
    ) -> JobPlan:
        """The plan of a retrain of ``steps`` optimiser steps of ``batch_size``, encoding
        ``to_evaluate`` utterances to evaluate (every encoder's that the cache lacks), checking
        ``parity`` questions with the int8 copy (0: no int8 copy), encoding ``unlabelled``
        utterances for the first card, and training ``held_out_steps`` steps of held-out
        encoders that encode ``held_out_texts`` utterances in all (0: no held-out calibration).
        ``checkpoints``: the steps at which the training's stages end (an anytime retrain:
        the first pass, then the whole run), each saved, evaluated and served; a later one
        encodes ``later_evaluate`` utterances (its own: the others' are known by then);
        ``recorded``: the utterances the version that serves then encodes to be measured on
        the whole test split for the record (0: its gate measured all of it)."""
        rows = job_phases.BY_JOB  # the planned seconds: the phase table's, read now

        def stretch(phase: str, items: float = 0) -> float:
            return rows[phase].seconds + max(0, items) * rows[phase].per_item

        def pairs(phase: str, n_steps: int) -> float:
            return stretch(phase, n_steps * max(1, batch_size))

        ends = [e for e in checkpoints if 0 < e < steps] + [max(1, steps)]
        segments = [Segment(PREPARING, stretch(PREPARING))]
        for n, end in enumerate(ends):
            first = ends[n - 1] if n else 0
            last = n == len(ends) - 1
            segments += [
                Segment(TRAINING, pairs(TRAINING, max(1, end - first)), (first, end)),
                Segment(SAVING, stretch(SAVING)),
                Segment(EVALUATING, stretch(EVALUATING, to_evaluate if n == 0 else later_evaluate)),
                # the first card's unlabelled utterances, in the space that stays: the int8
                # copy's after it (registering) when there is one, else the last checkpoint's
                Segment(SERVING, stretch(SERVING, unlabelled if last and not parity else 0)),
            ]
        if recorded:
            segments.append(Segment(EVALUATING, stretch(EVALUATING, recorded)))
        segments += [
            Segment(INT8, stretch(INT8, parity) if parity else 0.0),
            Segment(REGISTERING, stretch(REGISTERING, unlabelled if parity else 0)),
            # the held-out encoders' steps, and their utterances encoded as an evaluation's
            Segment(
                CALIBRATING,
                pairs(CALIBRATING, held_out_steps)
                + max(0, held_out_texts) * rows[EVALUATING].per_item
                if held_out_steps or held_out_texts
                else 0.0,
            ),
        ]
        return cls(tuple(segments))

    @property
    def seconds(self) -> dict[str, float]:
        """Each phase's expected seconds, its stretches added up."""
        out: dict[str, float] = {}
        for seg in self.segments:
            out[seg.phase] = out.get(seg.phase, 0.0) + seg.seconds
        return out

    @property
    def total(self) -> float:
        return sum(seg.seconds for seg in self.segments)

    @property
    def steps(self) -> int:
        """The training's planned steps in all (its last stretch's end)."""
        return max((seg.steps[1] for seg in self.segments if seg.steps), default=0)

    def find(self, phase: str, at: int = -1) -> int | None:
        """The stretch a job enters when it starts ``phase`` while in stretch ``at``: that one
        when it is of this phase, else the next one of it (the first one of it when none
        follows); None for a phase the plan does not have."""
        if 0 <= at < len(self.segments) and self.segments[at].phase == phase:
            return at
        found = [i for i, seg in enumerate(self.segments) if seg.phase == phase]
        later = [i for i in found if i > at]
        return (later or found)[0] if found else None

    def _at(self, phase: str | int) -> int | None:
        return phase if isinstance(phase, int) else self.find(phase)

    def weight(self, phase: str | int) -> float:
        """The stretch's share of the whole job (0 for a phase it does not have)."""
        i = self._at(phase)
        if i is None or not self.total:
            return 0.0
        return self.segments[i].seconds / self.total

    def start(self, phase: str | int) -> float:
        """The share of the job done when the stretch starts (every stretch before it)."""
        i = self._at(phase)
        if i is None or not self.total:
            return 0.0
        return sum(seg.seconds for seg in self.segments[:i]) / self.total

    def share(self, phase: str | int, done: float = 0, total: float = 0) -> float:
        """The job's share done at ``done`` of ``total`` of the stretch (0 of 0: its start); a
        training stretch counts the whole run's steps within its own (``total`` unused).

        Never less for a later stretch or a larger count: the stretches follow each other and
        each one's share ends where the next one's starts."""
        i = self._at(phase)
        if i is None:
            return 0.0
        steps = self.segments[i].steps
        if steps is not None and total:
            first, last = steps
            within = (done - first) / (last - first) if last > first else 1.0
        else:
            within = done / total if total else 0.0
        within = min(1.0, max(0.0, within))
        return min(1.0, self.start(i) + self.weight(i) * within)

    def by_time(
        self, phase: str | int, seconds_in: float, seconds_per_share: float | None
    ) -> float:
        """The job's share done ``seconds_in`` seconds into a stretch without a count: at the
        pace the job has kept so far (``seconds_per_share``: its time taken per share done;
        None before there is one), the stretch should take ``weight × seconds_per_share``; the
        share within it is ``1 - exp(-seconds_in / that)``: two thirds at the time it should
        take, and never its end while it runs (a stretch slower than planned still moves, more
        and more slowly, and the time left grows as it should)."""
        expected = self.weight(phase) * seconds_per_share if seconds_per_share else 0.0
        if expected <= 0 or seconds_in <= 0:
            return self.start(phase)
        return self.start(phase) + self.weight(phase) * (1 - math.exp(-seconds_in / expected))

    def ahead(self, at: int) -> tuple[Segment, ...]:
        """The stretches after ``at`` up to the end of the next ``serving`` one (the next
        version to answer, or the next checkpoint's verdict), or up to the job's end when none
        follows."""
        later = [i for i, seg in enumerate(self.segments) if seg.phase == SERVING and i > at]
        end = later[0] if later else len(self.segments) - 1
        return self.segments[at + 1 : end + 1]


class Tracker:
    """The share done and the time left of one running job, as its worker sees it: the plan,
    which stretch of it runs since when, and its count. Times are the worker's clock (seconds,
    any origin); the job started at ``started``.

    Example:
        >>> plan = JobPlan.of({"training": 80.0, "evaluating": 20.0})
        >>> t = Tracker(plan, started=0.0)
        >>> t.enter("training", 0.0); t.count(40, 100, 40.0, eta=60.0)
        >>> share, left = t.read(40.0)  # 40 % of training: 32 % of the job
        >>> round(share, 2), left  # 60 s more of training, then evaluating at that pace
        (0.32, 85.0)
    """

    def __init__(self, plan: JobPlan | None = None, *, started: float = 0.0) -> None:
        self.plan, self.started = plan, started
        self.phase, self.since = "", started
        self.at = -1  # the plan's stretch running now
        self.pace: float | None = None  # seconds per share before this stretch
        self.done, self.total = 0.0, 0.0
        self.phase_left: tuple[float, float] | None = None  # (its own ETA, when it was said)
        self.share = 0.0
        # seconds planned and taken by the stretches that ended, training's and the others'
        self.spent = {True: [0.0, 0.0], False: [0.0, 0.0]}

    def enter(self, phase: str, now: float) -> None:
        """``phase`` starts at ``now`` (the plan's next stretch of it): the pace so far is what
        the stretches before it took."""
        if self.plan is not None:
            found = self.plan.find(phase, self.at)
            if found is not None and found == self.at and phase == self.phase:
                return  # a second line of the stretch under way
            self._ended(now)
            self.at = found if found is not None else self.at
        self.phase, self.since, self.done, self.total, self.phase_left = phase, now, 0, 0, None
        start = self.plan.start(self.at) if self.plan and self.at >= 0 else 0.0
        self.pace = (now - self.started) / start if start > 0.01 else None
        self._raise(start)

    def _ended(self, now: float) -> None:
        """The running stretch ends at ``now``: its planned and taken seconds join its kind's
        (preparing's are left out: its base encoder's load is there or not)."""
        assert self.plan is not None
        if not 0 <= self.at < len(self.plan.segments) or self.phase == PREPARING:
            return
        seg = self.plan.segments[self.at]
        if seg.phase == self.phase:
            spent = self.spent[seg.phase in TRAINS]
            spent[0] += seg.seconds
            spent[1] += now - self.since

    def _per_second(self, phase: str, pace: float) -> float:
        """Seconds taken per planned second by the stretches of ``phase``'s kind so far, once
        they ran :data:`PACE_AFTER` planned seconds; else the job's ``pace`` (per share)."""
        assert self.plan is not None
        planned, taken = self.spent[phase in TRAINS]
        if planned >= PACE_AFTER:
            return taken / planned
        return pace / self.plan.total if self.plan.total else 0.0

    def count(self, done: float, total: float, now: float, eta: float | None = None) -> None:
        """The running stretch's count; ``eta``: its own seconds left as it measured them (of
        the whole run's steps, for training: this stretch's part of them is taken). A stretch
        without a count of its own (the int8 copy's measurement counts in the evaluation's
        utterances) goes on by its time."""
        if self.phase not in COUNTED:
            return
        self.done, self.total = done, total
        steps = self._steps()
        if eta is not None and steps is not None and total > done:
            eta *= max(0.0, steps[1] - done) / (total - done)  # this stretch's steps left
        self.phase_left = (eta, now) if eta is not None else None
        if self.plan and self.at >= 0:
            self._raise(self.plan.share(self.at, done, total))

    def _steps(self) -> tuple[int, int] | None:
        if self.plan is None or not 0 <= self.at < len(self.plan.segments):
            return None
        return self.plan.segments[self.at].steps

    def _raise(self, share: float) -> None:
        self.share = max(self.share, min(1.0, share))

    def read(self, now: float) -> tuple[float, float | None]:
        """(share done, seconds left or None) at ``now``: left until the next version answers
        (the end of the next ``serving`` stretch) while one is ahead, else until the job's end
        (issue 71 item 6: the time left names what it counts down to)."""
        plan = self.plan
        if plan is None or self.at < 0:
            return self.share, None
        seconds_in = now - self.since
        if self.phase not in COUNTED:
            self._raise(plan.by_time(self.at, seconds_in, self.pace))
        elapsed = now - self.started
        if self.share < ETA_FROM_SHARE or elapsed < ETA_FROM_SECONDS:
            return self.share, None
        pace = self.pace or self._own_pace(seconds_in)
        if pace is None:
            return self.share, None
        rest = self._phase_rest(seconds_in, pace)
        if rest is None:
            return self.share, None
        if self.phase == SERVING:  # the version it serves answers from here: the next one
            rest = 0.0
        ahead = sum(seg.seconds * self._per_second(seg.phase, pace) for seg in plan.ahead(self.at))
        return self.share, round(rest + ahead, 1)

    def _own_pace(self, seconds_in: float) -> float | None:
        """Seconds per share of the job, from the running stretch alone (the first one)."""
        assert self.plan is not None
        within = self.plan.share(self.at, self.done, self.total) - self.plan.start(self.at)
        return seconds_in / within if within > 0 else None

    def _phase_rest(self, seconds_in: float, pace: float) -> float | None:
        """The running stretch's seconds left; None when there is no honest number."""
        assert self.plan is not None
        if self.phase in COUNTED:  # its own measure, less the time since; none until timed
            if self.phase_left is None:
                return None
            eta, said = self.phase_left
            return max(0.0, eta - (self.since + seconds_in - said))
        if self.pace is None:
            return None
        expected = self.plan.segments[self.at].seconds * self._per_second(self.phase, pace)
        if seconds_in > OVERDUE_AFTER * expected + 3.0:
            return None  # longer than planned
        return max(0.0, expected - seconds_in)
