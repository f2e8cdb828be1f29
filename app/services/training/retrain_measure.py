"""The retrain's measurement: what a job is measured on (:class:`Snapshot`), the encoders it
scores as one measured phase (:class:`Evaluation`), the job's plan counted before training
(:func:`plan`), and the ``measure`` phase itself (:func:`measure`): the new encoder, as it will
serve, with the frozen base and the active version beside it, read from the evaluations already
measured on these rows (:mod:`app.serving.eval_memo`) when they are known."""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from app.services.models.evaluation import evaluate_version, evaluation_key, evaluation_memo
from app.services.models.int8 import PARITY_QUERIES, parity_split
from app.services.models.job_plan import JobPlan
from app.services.training.retrain_state import EvalProgress, RetrainRun, Snapshot
from app.serving.factories import FactoryBuilder
from core.encoding.registry import Encoder
from core.evaluation import EvalData
from core.evaluation.held_out import HELD_OUT_FOLDS
from core.evaluation.version_metrics import VersionMetrics
from core.multilabel.head import HEAD_DIR, MultiLabelHead
from core.retrieval.factory import PredictorFactory
from core.training import Eta, TrainConfig, TrainingCancelled, checkpoint_steps
from storage.job_phases import EVALUATING

if TYPE_CHECKING:
    from core.training.prefix import PrefixStates

Scored = tuple[VersionMetrics, MultiLabelHead | None]
Known = list[tuple[PredictorFactory, dict[str, Any]]]


class Evaluation:
    """Scores several encoders on one data set as one measured phase: the count is what the
    embedding cache does not hold yet, known before the first one is encoded. An encoder whose
    evaluation on these rows is already measured (``known``: factory and its options, read from
    :func:`app.services.models.evaluation.evaluation_memo`) is not counted: it is read, not measured."""

    def __init__(
        self,
        run: RetrainRun,
        data: EvalData,
        factories: list[PredictorFactory],
        known: Known | None = None,
    ) -> None:
        self.run, self.data = run, data
        self.memo = evaluation_memo(run.live.factories)
        self.encoders = len({fingerprint(f) for f in factories})
        self.total = to_encode(run.live.factories, data, factories, known or [])
        self.done = 0
        self.eta = Eta(self.total)
        self.scored: dict[str, Scored] = {}

    def add(self, factory: PredictorFactory) -> None:
        """Count one more encoder to score (the int8 copy, known once exported): its texts that
        the embedding cache does not hold yet."""
        texts = [*self.data.train_texts, *self.data.test_texts]
        missing = len(self.run.live.cache.missing(cast(Encoder, factory.encoder), texts))
        self.encoders += 1
        self.total += missing
        self.eta.total = self.total

    def _report(self, done: int) -> None:
        if self.run.reporter.should_cancel():
            raise TrainingCancelled(f"cancelled while evaluating ({done} of {self.total})")
        left = self.eta.update(done)
        self.run.reporter.evaluation(EvalProgress(done, self.total, self.encoders, left))

    def start(self) -> None:
        self._report(0)

    def score(
        self, factory: PredictorFactory, *, remembered: bool = False, **options: Any
    ) -> Scored:
        """Metrics (and head) of ``factory``'s Predictors (:func:`evaluate_version`); an
        encoder already scored is not scored again. ``remembered``: its metrics may come from
        the evaluations already measured (its head is then None), and are kept there."""
        key = fingerprint(factory)
        if key in self.scored:
            return self.scored[key]
        offset = self.done

        def progress(done: int, _total: int) -> None:
            self.done = offset + done
            self._report(self.done)

        result = evaluate_version(
            factory,
            self.data,
            self.run.live.cache,
            progress=progress,
            memo=self.memo if remembered else None,
            **options,
        )
        self.scored[key] = result
        return result

    def keep(self, factory: PredictorFactory, options: dict[str, Any], metrics: Any) -> None:
        """Keep ``metrics`` as ``factory``'s on these rows: what a live evaluation of the
        version (the report's, the Train tab's) then reads instead of measuring again."""
        self.memo.put(evaluation_key(factory, self.data, **memo_options(options)), metrics)


def to_encode(
    builder: FactoryBuilder,
    data: EvalData,
    factories: list[PredictorFactory],
    known: Known | None = None,
) -> int:
    """The utterances evaluating ``factories`` on ``data`` has to encode: each distinct
    encoder's that the embedding cache lacks, but none of one whose evaluation on these rows is
    already measured (``known``: factory and its options)."""
    memo = evaluation_memo(builder)
    texts = [*data.train_texts, *data.test_texts]
    remembered = {
        fingerprint(f)
        for f, options in known or []
        if memo.get(evaluation_key(f, data, **memo_options(options))) is not None
    }
    distinct = {fingerprint(f): cast(Encoder, f.encoder) for f in factories}
    return sum(
        len(builder.cache.missing(e, texts)) for k, e in distinct.items() if k not in remembered
    )


def plan(
    run: RetrainRun,
    cfg: TrainConfig,
    snap: Snapshot,
    int8: bool,
    held_out_steps: int = 0,
    anytime: bool = True,
) -> JobPlan:
    """The job's plan: what each phase has to do, counted before training starts. Each
    checkpoint's encoder (the first pass's, then the whole run's) encodes every distinct train
    and test utterance; the frozen base and the active
    version (``snap.others``) what the cache lacks of theirs; the int8 copy (``int8``:
    this job builds one) its parity questions, then (when it passes) every utterance again,
    measured as it will serve; the held-out encoders (``held_out_steps``: 0 when this job
    calibrates out of scope the quick way) their steps, each then encoding the pool;
    ``anytime``: every stage's end is measured (else the last one only)."""
    data, others = snap.data, snap.others
    new = len({*data.train_texts, *data.test_texts})
    parity = 0
    if int8 and not snap.multi:
        pool, _, queries = parity_split(data, PARITY_QUERIES)
        parity = len(pool) + len(queries) + new if len(queries) >= 20 and pool else 0
    ends = checkpoint_steps(snap.fit.texts, snap.fit.labels, cfg)
    return JobPlan.estimate(
        steps=ends[-1],
        batch_size=cfg.batch_size,
        to_evaluate=new + to_encode(run.live.factories, data, [f for f, _ in others], others),
        checkpoints=ends if anytime else ends[-1:],
        later_evaluate=new,
        parity=parity,
        unlabelled=snap.unlabelled,
        held_out_steps=held_out_steps,
        held_out_texts=HELD_OUT_FOLDS * len(data.train_texts) if held_out_steps else 0,
    )


def fingerprint(factory: PredictorFactory) -> str:
    return str(cast(Encoder, factory.encoder).fingerprint)


def memo_options(options: dict[str, Any]) -> dict[str, Any]:
    return {"multi_label": bool(options.get("multi_label")), "head": options.get("head")}


@dataclass
class Measured:
    """The ``measure`` phase's result: the new encoder's metrics as it will serve (its head
    saved into the artifact), the frozen base's and the active version's on the same rows, the
    seconds it took, and the evaluation (the int8 phase scores the copy in it)."""

    new: VersionMetrics
    base: VersionMetrics
    reference: VersionMetrics
    factory: PredictorFactory
    evaluation: Evaluation
    seconds: float


def measure(
    run: RetrainRun,
    snap: Snapshot,
    encoder: Encoder,
    folder: Path,
    prefix: PrefixStates | None = None,
    base_shares_prefix: bool = True,
) -> Measured:
    """The ``measure`` phase: the new ``encoder`` (the model in memory, whose artifact is being
    written into ``folder``) scored by the Predictor it will serve, and the frozen base and the
    active version (``snap.others``, with their options) read from the evaluations already measured
    on these rows, or measured when they are not. A multi-label version's head is fitted here
    and saved into ``folder`` (it is part of the version). ``prefix``: the frozen lower layers'
    states its training computed: the new encoder and the base compute only their upper layers
    on them (:class:`core.training.prefix.PrefixedEncoder`: the same vectors, half the work);
    the base only when ``base_shares_prefix`` (its frozen layers computed them: the training
    started from the base, not from a tuned version)."""
    started = time.monotonic()
    (base_factory, base_options), (ref_factory, ref_options) = snap.others
    if prefix is not None:
        from core.training.prefix import PrefixedEncoder

        encoder = PrefixedEncoder(encoder, prefix)
        texts = [*snap.data.train_texts, *snap.data.test_texts]
        base = cast(Encoder, base_factory.encoder)
        if base_shares_prefix and run.live.cache.missing(base, texts):  # its own copy: other
            # threads may use the process's base
            own = type(base)(copy.deepcopy(base.model), base.name, base.fingerprint)
            base_factory = base_factory.replace(encoder=PrefixedEncoder(own, prefix))
    new_factory = run.live.factories.predictor_factory(snap.project_id, encoder, snap.settings)
    evaluation = Evaluation(
        run,
        snap.data,
        [new_factory, base_factory, ref_factory],
        [(base_factory, base_options), (ref_factory, ref_options)],
    )
    run.reporter.log(
        f"evaluating {evaluation.encoders} encoders on {snap.data.split}: "
        f"{evaluation.total:,} utterances to encode",
        phase=EVALUATING,
    )
    evaluation.start()
    new_metrics, head = evaluation.score(new_factory, **snap.options)
    if head is not None:  # the head is part of the version: written before the rename
        head.save(folder / HEAD_DIR)
    evaluation.keep(new_factory, snap.options, new_metrics)
    base_metrics, _ = evaluation.score(base_factory, remembered=True, **base_options)
    ref_metrics, _ = evaluation.score(ref_factory, remembered=True, **ref_options)
    return Measured(
        new=new_metrics,
        base=base_metrics,
        reference=ref_metrics,
        factory=new_factory,
        evaluation=evaluation,
        seconds=time.monotonic() - started,
    )
