"""The REST API's request and response bodies (pydantic), as the OpenAPI docs at ``/docs`` show
them. A prediction has exactly the structure a model bundle's ``predict`` returns
(:func:`core.retrieval.predictor.prediction_to_dict`): keys a prediction does not carry (a
multi-label head's ``probabilities``, a ``threshold``) are left out, not sent as null. A request
body takes each field's value only of its own type in JSON (:class:`app.perimeter.json_types.Body`:
``true`` is no number, ``1`` no ``true``)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.limits import MAX_K
from app.perimeter.json_types import Body
from storage.ids import MAX_ID

SPLITS = ("train", "test", "unlabelled")
# Every id a client sends, in a path, a query or a body (:mod:`storage.ids`): a whole number from
# 1 to the id columns' largest, else 422 saying so, before any statement (the OpenAPI docs say it
# as the parameter's minimum and maximum). 2**64 was a 500 with a traceback (issue 64).
Id = Annotated[int, Field(ge=1, le=MAX_ID)]


class Example(BaseModel):
    """A labelled utterance behind a score."""

    id: int
    text: str
    labels: list[str]
    similarity: float


class IntentScore(BaseModel):
    """One ranked intent: ``score`` decides; with the default rule it is the mean of
    ``nearest`` (its nearest example's similarity) and ``prototype`` (the similarity to the
    centre of its examples); ``best`` is that nearest example."""

    intent: str
    score: float
    best: Example
    nearest: float | None = None
    prototype: float | None = None
    anchor: float | None = Field(
        None, description="similarity to the intent's description or name (anchors on)"
    )


class Prediction(BaseModel):
    """One utterance's prediction: ``labels`` is the decision (empty and ``oos`` true when it is
    no intent), ``intents`` the ranking with the example behind each score, ``neighbours`` the
    nearest labelled examples."""

    text: str
    top: str | None
    score: float
    margin: float
    labels: list[str]
    oos: bool
    ambiguous: bool
    threshold: float | None = None
    probabilities: dict[str, float] | None = None
    context: str | None = Field(None, description="the turn before the utterance, as sent")
    context_used: bool | None = Field(
        None, description="whether the project encoded the utterance after its context"
    )
    intents: list[IntentScore]
    neighbours: list[Example]


class PredictIn(Body):
    """One utterance (``text``) or many (``texts``): many are capped per call by role (200 for
    a viewer, 1,000 for a designer or admin). Optionally the turn before each one (``context``
    with ``text``, ``contexts`` with ``texts``): a project that encodes context uses it."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"text": "where is my parcel"},
                {"texts": ["hi", "bye"]},
                {"text": "yes please", "context": "Do you want to cancel your card?"},
            ]
        }
    )
    text: str | None = Field(None, description="one utterance (served in a micro-batch)")
    texts: list[str] | None = Field(None, description="several utterances (one batch call)")
    context: str | None = Field(None, description="the turn before `text` (e.g. the bot's)")
    contexts: list[str] | None = Field(
        None, description="the turn before each of `texts` (one per utterance, '' for none)"
    )
    k: int = Field(1, ge=1, le=MAX_K, description="labelled examples per intent behind its score")

    @model_validator(mode="after")
    def one_of(self) -> PredictIn:
        if (self.text is None) == (self.texts is None):
            raise ValueError("send either `text` (one utterance) or `texts` (a list)")
        if self.texts is not None and not self.texts:
            raise ValueError("`texts` is empty: send at least one utterance")
        if self.context is not None and self.text is None:
            raise ValueError("`context` goes with `text`; with `texts` send `contexts`")
        if self.contexts is not None and self.texts is None:
            raise ValueError("`contexts` goes with `texts`; with `text` send `context`")
        return self

    def all_texts(self) -> list[str]:
        return [self.text] if self.text is not None else list(self.texts or [])


class PredictOut(BaseModel):
    predictions: list[Prediction]


class LabelIn(Body):
    """Add a labelled utterance, or relabel it when the text is already in the project. An
    intent the project does not have is refused (400, naming the closest ones) unless
    `create` is true: a typo would otherwise become an intent of one example."""

    text: str = Field(..., min_length=1)
    intents: list[str] = Field(default_factory=list, description="empty: no intent")
    split: str = Field("train", description="train, test or unlabelled")
    create: bool = Field(False, description="create intents the project does not have yet")
    version: Id | None = Field(
        None, description="the utterance's `version` as you read it: 409 if it changed since"
    )


class Utterance(BaseModel):
    id: int
    text: str
    intents: list[str]
    split: str
    version: int


class UtterancesOut(BaseModel):
    utterances: list[Utterance]


class Intent(BaseModel):
    """An intent, its description (empty: none; with anchors on, it predicts before the intent
    has examples) and its labelled examples in `train` and `test`."""

    name: str
    description: str
    n_train: int
    n_test: int


class IntentsOut(BaseModel):
    intents: list[Intent]


class DescribeIn(Body):
    """Set an intent's description (an empty text clears it; at most 500 characters)."""

    description: str


class Project(BaseModel):
    """A project and its counts (as the project picker's headline shows them)."""

    name: str
    base_encoder: str
    read_only: bool = Field(..., description="imported from a bundle: predict only")
    n_intents: int
    n_train: int
    n_test: int
    n_unlabelled: int
    multi_label: bool
    active_version: int | None = Field(..., description="null: the frozen base encoder serves")
    encoding: Encoding | None = Field(
        None, description="the background encoding of its rows (null: not looked at yet)"
    )


class Encoding(BaseModel):
    """How far the background encoding of a project's rows is (issue 72)."""

    rows: int
    encoded: int = Field(..., description="rows with a vector in the space that serves")
    space: str = Field(..., description="the version whose space serves (v3, the base encoder)")
    ordered_in: str = Field(..., description="the space the Label queue orders in meanwhile")
    rate: float | None = Field(..., description="rows a second (null: not measured yet)")
    done: bool
    seconds_left: float | None


class ProjectsOut(BaseModel):
    projects: list[Project]


class NewProjectIn(Body):
    name: str = Field(..., min_length=1, max_length=120)
    base_encoder: str | None = Field(
        None,
        description="minilm (embedded) or mpnet (`make mpnet`); null: this device's default "
        "(mpnet on a GPU when installed, else minilm)",
    )


class BulkLabelIn(Body):
    """Label many utterances as one batch, as the UI's bulk label does: first with
    ``preview: true`` (nothing changes; the answer's ``change`` lists the ids that would, and its
    ``token`` digests what it would do), then the same ids and intents with that ``token`` (or
    ``expected`` set to its ``change``): refused with 409, nothing changed, when the rows to
    change are no longer exactly those. Already labelled rows are left as they are unless
    ``relabel_labelled``; items you may not change now (a team's: given to annotators, waiting
    for review, or accepted from their answers) always are, listed in ``protected``. An intent
    the project does not have is refused (400, naming the closest ones) unless ``create`` is
    true, as in ``/label``."""

    ids: list[Id] = Field(..., min_length=1, max_length=10_000)
    intents: list[str] = Field(default_factory=list, description="empty: remove the intents")
    relabel_labelled: bool = False
    create: bool = Field(False, description="create intents the project does not have yet")
    preview: bool = False
    token: str | None = Field(None, description="the preview's `token` (to apply)")
    expected: list[Id] | None = Field(None, description="the preview's `change` (to apply)")

    @model_validator(mode="after")
    def previewed(self) -> BulkLabelIn:
        if not self.preview and self.expected is None and self.token is None:
            raise ValueError(
                "preview first (`preview: true`), then send its `token` (or its `change` as "
                "`expected`)"
            )
        return self


class BulkLabelOut(BaseModel):
    applied: bool
    selected: int
    change: list[int] = Field(..., description="the ids that change (preview) or changed")
    left: list[int] = Field(..., description="already labelled otherwise: left as they are")
    protected: list[int] = Field(
        default_factory=list, description="items you may not change now: left as they are"
    )
    summary: str
    token: str = Field(..., description="a digest of what this preview does: send it to apply")
    batch: str | None = Field(None, description="applied: the batch id that `undo` reverts")


class Batch(BaseModel):
    """One change of the project (a bulk label, an import, a merge, a retrain...) as the
    Activity tab lists it: `batch` is what `undo` takes (empty for a retrain: a rollback in the
    Train tab's Versions undoes one), `when` is UTC, `rows` the utterances it changed (null for a
    retrain, which changes none)."""

    batch: str
    when: str
    user: str
    action: str
    rows: int | None = Field(..., description="utterances changed; null for a retrain")
    example: str
    state: str = Field(..., description="`can be undone`, `undone`, or why it cannot be")
    undoable: bool


class BatchesOut(BaseModel):
    batches: list[Batch]


class UndoIn(Body):
    batch: str = Field(..., min_length=1, description="a batch id (a bulk label's `batch`)")


class MessageOut(BaseModel):
    message: str


class HealthOut(BaseModel):
    ok: bool = Field(..., description="every server the app uses answers (else 503)")
    ready: bool = Field(..., description="warm, not stopping, and its database answers")
    state: str = Field(..., description="ready, warming up (n of m projects), or stopping")
    dependencies: dict[str, str] = Field(
        ..., description="database, model_store and queue: up, or why not"
    )
    down: list[str] = Field(..., description="the dependencies that do not answer")


class ReadyOut(BaseModel):
    ready: bool = Field(..., description="a request sent here is served now (else 503)")
    state: str = Field(..., description="ready, warming up (n of m projects), or stopping")
    down: list[str] = Field(..., description="the dependencies that do not answer")


class TrainIn(Body):
    method: str = Field(
        "convfit",
        description="convfit: ConvFiT Stage 2, contrastive task-tuning of the sentence encoder "
        "with an in-batch ranking loss (the default; `fast`, its older name, is still accepted); "
        "lora: the same on LoRA adapters (a small version)",
        examples=["convfit", "lora"],
    )
    settings: dict[str, Any] = Field(
        default_factory=dict, description='TrainConfig settings, e.g. {"epochs": 2}'
    )


class Job(BaseModel):
    id: int
    project_id: int
    status: str = Field(..., description="queued, running, succeeded, failed or cancelled")
    phase: str = Field(..., description="the phase running now: preparing, training, …")
    step: int = Field(..., description="of the phase's count (training steps, utterances)")
    total: int
    percent: int = Field(..., description="the whole job's, never going back; 100 once done")
    eta_seconds: float | None = Field(
        ...,
        description="seconds to a first version answering, then to the next checkpoint's "
        "verdict (it serves only if it measures better), else to the job's end (`state` says "
        "which); null while estimating",
    )
    message: str
    model_version_id: int | None = Field(
        ..., description="its version, once registered: it serves from its first checkpoint on"
    )
    served_step: int | None = Field(
        None, description="the training step of the checkpoint its version serves now"
    )
    train_steps: int | None = Field(None, description="the training's planned steps")
    improving: bool = Field(
        False, description="its version serves an earlier checkpoint while the rest trains"
    )
    trigger: str = Field("manual", description="who asked: manual, or auto (after new labels)")
    verdict: str = Field(
        "",
        description="what its version's checkpoint measured and whether it serves, e.g. 'v9 "
        "(continuing v8 with 23 new labels) measured 88.6 % vs 88.3 %: serves' or '… kept back: "
        "86.9 % < 88.3 %, v8 keeps serving'; empty before one is measured",
    )
    state: str = Field(
        "",
        description="the job in one line, as the Train tab and the CLI say it (e.g. 'v9 (continuing "
        "v8 with 23 new labels) measured 88.6 % vs 88.3 %: serves · improving: step 60 of 116 · "
        "about 40 s to the verdict on the next checkpoint')",
    )
    log: str = Field("", description="the job's log, one time-stamped line per step")


class TrainOut(BaseModel):
    job: Job
    created: bool = Field(..., description="false: a retrain was already queued or running")


class DeletedOut(BaseModel):
    message: str = Field(..., description="what was deleted: its id, text, intents and split")
    batch: str = Field(..., description="the batch id that `undo` reverts (the row comes back)")


class ErrorOut(BaseModel):
    error: str
    job_id: int | None = Field(
        None, description="with 503: the training job that could not be queued (stored as failed)"
    )
