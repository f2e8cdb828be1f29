"""The retrain's measurement: what a job is measured on (:class:`Snapshot`), the encoders it
scores as one measured phase (:class:`Evaluation`), the job's plan counted before training
(:func:`plan`), and the ``measure`` phase itself (:func:`measure`): the new encoder, as it will
serve, with the frozen base and the active version beside it, read from the evaluations already
measured on these rows (:mod:`app.serving.eval_memo`) when they are known."""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from app.services.models.evaluation import evaluate_version, evaluation_key, evaluation_memo
from app.services.models.int8 import PARITY_QUERIES, parity_split
from app.services.training.job_plan import JobPlan
from app.services.training.retrain_continue import continued_steps
from app.services.training.retrain_state import EvalProgress, RetrainRun, Snapshot
from app.serving.factories import FactoryBuilder
from core.encoding.registry import Encoder
from core.evaluation import EvalData
from core.evaluation.held_out import HELD_OUT_FOLDS
from core.evaluation.paired import Paired, paired, stratified_sample
from core.evaluation.scoring import knn_predict
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
        *,
        whole: EvalData | None = None,
    ) -> None:
        self.run, self.data = run, data
        self.whole = whole if whole is not None else data  # the rows ``data`` was drawn from
        self.memo = evaluation_memo(run.live.factories)
        self.encoders = len({fingerprint(f) for f in factories})
        self.total = to_encode(run.live.factories, data, factories, known or [])
        self.done = 0
        self.eta = Eta(self.total)
        self.scored: dict[str, Scored] = {}
        self.tops: dict[str, list[str]] = {}  # each test question's top intent, by encoder

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

        tops: list[str] = []
        result = evaluate_version(
            factory,
            self.data,
            self.run.live.cache,
            progress=progress,
            memo=self.memo if remembered else None,
            tops=tops,
            **options,
        )
        self.scored[key] = result
        if tops:
            self.tops[key] = tops
        return result

    def hits(self, factory: PredictorFactory) -> list[bool]:
        """Whether ``factory``'s Predictor answers each test question right: as its scoring
        ranked them when it was measured here, else ranked now (an evaluation read from the
        memo; its vectors are the embedding cache's by now)."""
        tops = self.tops.get(fingerprint(factory))
        if tops is None:
            encoder = cast(Encoder, factory.encoder)
            cache = self.run.live.cache
            pool = factory.build(
                self.data.train_texts,
                self.data.train_labels,
                vectors=cache.encode(encoder, self.data.train_texts),
            )
            tops = knn_predict(pool, cache.encode(encoder, self.data.test_texts))
        return [top in gold for top, gold in zip(tops, self.data.test_labels, strict=True)]

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
    """The job's plan: what each phase has to do, counted before training starts. A
    continuation of the active version (``snap.continued``) trains first and is measured; then
    the whole recipe from the base encoder, whose first pass is not measured after a
    continuation (else each stage's end is). Each checkpoint's encoder encodes every distinct
    train utterance and the gate's test questions (:attr:`Snapshot.gate_data`); the frozen base
    and the active version (``snap.others``) what the cache lacks of theirs; when the gate
    measured a sample, the version that serves then encodes the rest of the test split for the
    record; the int8 copy (``int8``: this job builds one) its parity questions, then (when it
    passes) every utterance again, measured as it will serve; the held-out encoders
    (``held_out_steps``: 0 when this job calibrates out of scope the quick way) their steps,
    each then encoding the pool; ``anytime``: every stage's end is measured (else the last one
    only)."""
    data, others, rows = snap.data, snap.others, snap.gate_data
    new = len({*rows.train_texts, *rows.test_texts})
    every = len({*data.train_texts, *data.test_texts})
    parity = 0
    if int8 and not snap.multi:
        pool, _, queries = parity_split(data, PARITY_QUERIES)
        parity = len(pool) + len(queries) + every if len(queries) >= 20 and pool else 0
    ends = checkpoint_steps(snap.fit.texts, snap.fit.labels, cfg)
    first = continued_steps(snap, cfg)
    # a continuation, then the whole recipe from the base (its first pass unmeasured)
    checkpoints = [first, first + ends[-1]] if first else ends if anytime else ends[-1:]
    return JobPlan.estimate(
        steps=first + ends[-1],
        batch_size=cfg.batch_size,
        to_evaluate=new + to_encode(run.live.factories, rows, [f for f, _ in others], others),
        checkpoints=checkpoints,
        later_evaluate=new,
        # the record's whole split: the int8 copy's measurement where there is one (its stretch)
        recorded=every - new if snap.sample is not None and not parity else 0,
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
    saved into the artifact), the frozen base's and the active version's on the same rows
    (``data``: the gate's sample of the test split, or all of it), the new one against the
    active one question by question (``paired``: single-label projects with a test split), the
    seconds it took, and the evaluation (the int8 phase scores the copy in it)."""

    new: VersionMetrics
    base: VersionMetrics
    reference: VersionMetrics
    factory: PredictorFactory
    evaluation: Evaluation
    seconds: float
    data: EvalData | None = None
    paired: Paired | None = None

    @property
    def sampled(self) -> bool:
        """Measured on the gate's sample of the test split, not on all of it."""
        return (
            self.paired is not None
            and self.data is not None
            and self.paired.n < len(self.evaluation.whole.test_texts)
        )


def measure(
    run: RetrainRun,
    snap: Snapshot,
    encoder: Encoder,
    folder: Path | None,
    prefix: PrefixStates | None = None,
    base_shares_prefix: bool = True,
    data: EvalData | None = None,
    phase: str = EVALUATING,
) -> Measured:
    """The ``measure`` phase: the new ``encoder`` (the model in memory, whose artifact is being
    written into ``folder``) scored by the Predictor it will serve, and the frozen base and the
    active version (``snap.others``, with their options) read from the evaluations already measured
    on these rows, or measured when they are not. ``data``: the rows (default: the gate's,
    :attr:`Snapshot.gate_data`). A multi-label version's head is fitted here
    and saved into ``folder`` (it is part of the version; None: measured again for the record,
    the head is there). ``prefix``: the frozen lower layers'
    states its training computed: the new encoder and the base compute only their upper layers
    on them (:class:`core.training.prefix.PrefixedEncoder`: the same vectors, half the work);
    the base only when ``base_shares_prefix`` (its frozen layers computed them). ``phase``: the
    job's phase it counts in (the int8 copy's measurement, in ``int8``)."""
    started = time.monotonic()
    data = data if data is not None else snap.gate_data
    (base_factory, base_options), (ref_factory, ref_options) = snap.others
    if prefix is not None:
        from core.training.prefix import PrefixedEncoder

        encoder = PrefixedEncoder(encoder, prefix)
        texts = [*data.train_texts, *data.test_texts]
        base = cast(Encoder, base_factory.encoder)
        if base_shares_prefix and run.live.cache.missing(base, texts):  # its own copy: other
            # threads may use the process's base
            own = type(base)(copy.deepcopy(base.model), base.name, base.fingerprint)
            base_factory = base_factory.replace(encoder=PrefixedEncoder(own, prefix))
    new_factory = run.live.factories.predictor_factory(snap.project_id, encoder, snap.settings)
    evaluation = Evaluation(
        run,
        data,
        [new_factory, base_factory, ref_factory],
        [(base_factory, base_options), (ref_factory, ref_options)],
        whole=snap.data,
    )
    run.reporter.log(
        f"evaluating {evaluation.encoders} encoders on {_rows(data, snap.data)}: "
        f"{evaluation.total:,} utterances to encode",
        phase=phase,
    )
    evaluation.start()
    new_metrics, head = evaluation.score(new_factory, **snap.options)
    if head is not None and folder is not None:  # the head is part of the version
        head.save(folder / HEAD_DIR)
    evaluation.keep(new_factory, snap.options, new_metrics)
    base_metrics, _ = evaluation.score(base_factory, remembered=True, **base_options)
    ref_metrics, _ = evaluation.score(ref_factory, remembered=True, **ref_options)
    pair = None
    if not snap.multi and data.test_texts:
        pair = paired(evaluation.hits(new_factory), evaluation.hits(ref_factory))
    return Measured(
        new=new_metrics,
        base=base_metrics,
        reference=ref_metrics,
        factory=new_factory,
        evaluation=evaluation,
        seconds=time.monotonic() - started,
        data=data,
        paired=pair,
    )


def _rows(data: EvalData, whole: EvalData) -> str:
    """What a measurement runs on, for the job's log: "test", or "1,000 of 3,078 test
    questions"."""
    if len(data.test_texts) < len(whole.test_texts):
        return f"{len(data.test_texts):,} of {len(whole.test_texts):,} test questions"
    return data.split


def gate_sample(data: EvalData, size: int | None, seed: int) -> EvalData | None:
    """The gate's rows when they are fewer than the whole test split (issue 71 item 3): every
    train row (the pool) and ``size`` test questions stratified by intent
    (:func:`core.evaluation.paired.stratified_sample`); None when the whole split is no larger
    (or ``size`` is None: the device measures all of it)."""
    if size is None or len(data.test_texts) <= size:
        return None
    keep = stratified_sample(data.test_labels, size, seed)
    return replace(
        data,
        test_texts=[data.test_texts[i] for i in keep],
        test_labels=[data.test_labels[i] for i in keep],
    )
