"""TaDSE at training time (``papers/tadse.txt``): template filling and the utterance → template
pairs of the template-aware loss.

*Template filling* fills each intent's templates with slot-book values (seeded, at most
``per_intent`` new utterances per intent) and adds them as extra training examples. They train
the encoder only: they never join the labelled pool, so every prediction is still explained by
examples a person labelled. *Template pairs* give each training utterance that has one its
template: a filled utterance the template it came from, a labelled one the template of its entity
annotations, else the one the slot book gives it (:func:`core.slots.compress`: known values
replaced by their slot); the template-aware loss pulls the utterance toward that template.

Example:
    >>> data = template_training_data(
    ...     ["fly to Rome", "hi", "hello"], [("book",), ("greet",), ("greet",)],
    ...     {"book": ["a flight to {city}"]}, {"city": ["Rome", "Oslo"]}, per_intent=1, seed=0)
    >>> data.texts[3:], data.labels[3:], data.templates["fly to Rome"]
    (['a flight to Rome'], [('book',)], 'fly to {city}')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from core.slots import compress, fill_templates


@dataclass(frozen=True)
class TemplateData:
    """Training texts and labels (the labelled ones first, then the filled ones) and the template
    of each text that has one."""

    texts: list[str]
    labels: list[tuple[str, ...]]
    templates: dict[str, str] = field(default_factory=dict)
    filled: int = 0


def template_training_data(
    texts: Sequence[str],
    labels: Sequence[Sequence[str]],
    templates: Mapping[str, Sequence[str]],
    book: Mapping[str, Sequence[str]],
    *,
    per_intent: int,
    seed: int,
    annotated: Mapping[str, str] | None = None,
) -> TemplateData:
    """The labelled data plus ``per_intent`` filled templates per intent, and the template pairs.

    Args:
        texts: the labelled training utterances.
        labels: their intents (tuples).
        templates: intent -> its templates.
        book: slot -> values.
        per_intent: filled utterances per intent (``0``: none; the pairs are still made).
        seed: seeds the filling.
        annotated: text -> the template its entity annotations give (wins over the book's).
    """
    filled = fill_templates(templates, book, per_intent=per_intent, seed=seed, exclude=texts)
    pairs: dict[str, str] = {}
    for text in texts:
        template = (annotated or {}).get(text) or compress(text, book)
        if template != text:
            pairs[text] = template
    pairs.update({f.text: f.template for f in filled})
    return TemplateData(
        [*texts, *(f.text for f in filled)],
        [*(tuple(y) for y in labels), *((f.intent,) for f in filled)],
        pairs,
        len(filled),
    )
