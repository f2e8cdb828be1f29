"""The REST API's bodies of a team's work (pydantic), beside :mod:`app.api.models`: members,
assigning items to annotators, their answers, agreement, and the review of disputed items."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from app.api.models import Id
from app.perimeter.json_types import Body
from storage.ids import MAX_ID


class MemberOut(BaseModel):
    name: str
    role: str = Field(..., description="the user's role in the project (admin: every project)")
    user_role: str = Field(..., description="the user's own role, which caps it")
    status: str


class MembersOut(BaseModel):
    members: list[MemberOut]


class MemberIn(Body):
    """Make a user a member of the project (or change their role there): a role never above
    the user's own; without one, their own role."""

    role: str | None = Field(None, description="viewer or designer (default: the user's own)")


class AssignIn(Body):
    """Split the unlabelled utterances nobody has yet between ``annotators`` (designers), in
    turn; an ``overlap`` share of them, spread evenly, goes to a second annotator too."""

    annotators: list[str] = Field(..., min_length=1, description="user names, designers")
    overlap: float = Field(0.1, description="the share labelled twice, 0 to 1")
    search: str | None = Field(None, description="only utterances containing this text")
    limit: int | None = Field(None, ge=1, le=MAX_ID, description="only the first `limit` of them")


class AssignOut(BaseModel):
    given: dict[str, int] = Field(..., description="annotator -> utterances newly given")
    overlap: int = Field(..., description="how many of them went to two annotators")


class TeamItem(BaseModel):
    id: int
    text: str


class NextOut(BaseModel):
    """The caller's open items (assigned, not answered, unlabelled), in file order."""

    items: list[TeamItem]
    assigned: int = Field(..., description="items assigned to the caller in this project")
    answered: int = Field(..., description="how many of them the caller answered")


class AnswerIn(Body):
    """The caller's answer to an item assigned to them: ``label`` with ``intents``, ``oos``
    (out of scope) or ``skip``."""

    id: Id
    answer: Literal["label", "oos", "skip"]
    intents: list[str] = Field(default_factory=list, description="with `label`")


class AnswerOut(BaseModel):
    message: str
    accepted: bool = Field(..., description="this answer gave the item its label")
    labels: list[str] = Field(..., description="the item's accepted intents now ([]: none)")


class PairOut(BaseModel):
    a: str
    b: str
    items: int = Field(..., description="overlap items both answered")
    agreed: int
    kappa: float | None = Field(..., description="Cohen's kappa (null: undefined)")


class IntentAgreementOut(BaseModel):
    intent: str
    items: int = Field(..., description="overlap items where anyone gave the intent")
    statistic: str = Field(..., description="`kappa` (two annotators) or `alpha` (more)")
    value: float | None
    disputed: list[int] = Field(..., description="items where someone gave it and someone not")


class AgreementOut(BaseModel):
    """Agreement on the overlap items two annotators or more answered (skips left out);
    ``intents`` lowest agreement first."""

    annotators: list[str]
    items: int
    disputed: int
    alpha: float | None = Field(..., description="Krippendorff's alpha, nominal")
    alpha_masi: float | None = Field(..., description="alpha with the MASI distance of sets")
    pairs: list[PairOut]
    intents: list[IntentAgreementOut]


class GivenOut(BaseModel):
    annotator: str
    answer: str = Field(..., description="label, oos or skip")
    intents: list[str] = Field(..., description="`oos`: [out_of_scope]; `skip`: []")


class DisputeOut(BaseModel):
    id: int
    text: str
    answers: list[GivenOut]


class ReviewOut(BaseModel):
    disputes: list[DisputeOut]


class DecideIn(Body):
    intents: list[str] = Field(..., min_length=1, description="[out_of_scope] for out of scope")


class DecideOut(BaseModel):
    message: str
    batch: str = Field(..., description="the batch id that `undo` reverts")
