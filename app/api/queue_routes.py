"""The labelling queue over REST (under ``/api/v1``, beside :data:`app.api.routes.router`; issue
72 item 6): the Label tab's next items for the caller, in the order asked, each with the card's
suggestions (:func:`app.services.queue.queue.next_items`: the same order and cards as the tab).
It reads, as the tab's cards do: answers go through ``POST …/label`` or, in a team, ``POST
…/team/answers``.

| route | role |
|---|---|
| ``GET /projects/{project}/queue?order=&near=&limit=`` | viewer |
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel

from app.api.errors import ERROR_RESPONSES, PREFIX
from app.api.security import Reader, context
from app.services.queue import queue as queue_svc
from app.services.queue.queue import CHUNK, DEFAULT_ORDER, ORDERS

router = APIRouter(prefix=PREFIX, responses=ERROR_RESPONSES)

MAX_ITEMS = 100  # the most items one call orders and suggests for


class SuggestionOut(BaseModel):
    intent: str
    score: float
    example: str  # the intent's labelled example nearest to the utterance


class QueueItemOut(BaseModel):
    id: int
    version: int  # the utterance's (``POST …/label`` with it: 409 if it changed since)
    text: str
    suggestions: list[SuggestionOut]  # best first
    predicted: list[str]  # the model's decision (empty: no intent)
    multi_label: bool
    out_of_scope: bool  # the card says it looks out of scope
    split: str
    current: list[str]  # its intents now (the review order shows labelled utterances)
    answers: list[str]  # the annotators' answers (the disagreements to review)


class QueueOut(BaseModel):
    order: str
    items: list[QueueItemOut]


ORDER_HELP = "; ".join(f"`{k}`: {v}" for k, v in ORDERS.items())


@router.get(
    "/projects/{project}/queue",
    response_model=QueueOut,
    summary="The Label tab's next items for you, in the order asked, with their suggestions",
    description="The items the Label tab would show you next, first one first, each with the "
    "model's suggestions as its card shows them; in a team project your own assigned items "
    "come first and those given to others are left out. Nothing is answered. Orders: "
    + ORDER_HELP
    + ". `near` names the intent of the `near` order.",
)
def queue(
    request: Request,
    p: Reader,
    order: Annotated[str, Query(description="one of the orders")] = DEFAULT_ORDER,
    near: Annotated[str | None, Query(description="the intent to label near")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_ITEMS)] = CHUNK,
) -> Any:
    items = queue_svc.next_items(context(request).live, p, order, near=near, limit=limit)
    return {
        "order": order,
        "items": [
            {
                "id": i.id,
                "version": i.version,
                "text": i.text,
                "suggestions": [
                    {"intent": s.intent, "score": s.score, "example": s.example}
                    for s in i.suggestions
                ],
                "predicted": list(i.predicted),
                "multi_label": i.multi_label,
                "out_of_scope": i.out_of_scope,
                "split": i.split,
                "current": list(i.current),
                "answers": list(i.answers),
            }
            for i in items
        ],
    }
