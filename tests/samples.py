"""Small data sets that several test modules share (a module of data and builders, not of
tests: test modules import from here, never from each other)."""

from __future__ import annotations

import csv
import hashlib
import json
import zipfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from tests.handles import live


def write_csv(path: Path, rows: Iterable[Sequence[str]]) -> Path:
    """A project file in the app's CSV format: ``rows`` of (text, label, split)."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["text", "label", "split"])
        w.writerows(rows)
    return path


TINY = {
    "card_lost": [
        "I lost my card",
        "my card is missing",
        "cannot find my bank card",
        "card was stolen yesterday",
        "someone took my card",
    ],
    "balance": [
        "what is my balance",
        "how much money do I have",
        "show my account balance",
        "balance please",
        "how much is left in my account",
    ],
    "greeting": ["hello there", "hi", "good morning", "hey, how are you", "hello!"],
    "refund": [
        "I want my money back",
        "refund my order",
        "how do I get a refund",
        "return and refund please",
        "please give me a refund",
    ],
}
QUICK = {"method": "convfit", "epochs": 1, "batch_size": 8}


def make_tiny(serving_state, name: str = "tiny", encoder: str | None = None) -> str:
    """The project ``name`` holding :data:`TINY` (its fifth utterance of each intent in the test
    split), on ``encoder`` (None: the device's default, MiniLM here; ``"tiny"``: the test
    session's tiny encoder, :mod:`tests.tiny_encoder`, once the ``tiny_encoder`` fixture ran)."""
    from app.services.labelling import (
        data as data_svc,  # here: tests.team_local reads TINY without the app
    )
    from app.services.projects.projects import new_project

    new_project(serving_state.db, name, base_encoder=encoder)
    for intent, texts in TINY.items():
        for i, text in enumerate(texts):
            data_svc.add_utterance(  # its intents made by labelling, as asked for
                serving_state.db,
                live(serving_state, name),
                text,
                intent,
                "test" if i == 4 else "train",
                create=True,
            )
    return name


def retrain(serving_state, name: str, options: dict[str, Any] | None = None) -> Any:
    """A retrain of project ``name`` run to its end by the worker's own job path, in this
    process (its job, succeeded)."""
    from app import worker
    from app.services.training import retrain_jobs

    view, _ = retrain_jobs.request_retrain(
        serving_state.training, live(serving_state, name), options or QUICK, enqueue=False
    )
    worker.execute_job(serving_state, view.id)
    done = retrain_jobs.job(serving_state.training, view.id)
    assert done.status == "succeeded", done.log
    return done


def cut_copy(model: Any, layers: int) -> Any:
    """A copy of a SentenceTransformer cut to its lowest ``layers`` transformer layers: what the
    2-layer separate (non-siamese) label encoder of older versions looked like. That option left
    ``TrainConfig`` (bench/RESULTS.md), but versions and bundles trained with it still serve."""
    import copy

    from torch import nn

    label = copy.deepcopy(model)
    transformer = label[0].model
    transformer.encoder.layer = nn.ModuleList(list(transformer.encoder.layer)[:layers])
    transformer.config.num_hidden_layers = layers
    return label


def rewrite_bundle(src: Path, dst: Path, mutate: Callable[[dict[str, bytes]], None]) -> Path:
    """Copy a bundle, let ``mutate`` change its members (name -> bytes), and re-hash them in the
    manifest, as a bundle written that way would be."""
    with zipfile.ZipFile(src) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    mutate(members)
    manifest = json.loads(members["manifest.json"])
    manifest["files"] = {
        n: hashlib.sha256(data).hexdigest() for n, data in members.items() if n != "manifest.json"
    }
    members["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(dst, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return dst


# Three planted groups of unlabelled utterances for the candidate-intent tests.
GIFT = [
    "do you sell gift cards",
    "can I buy a gift card for my sister",
    "gift card for a friend's birthday",
    "how much is a gift card",
    "where can I get gift cards",
    "is there an electronic gift card",
    "can I send a gift card by email",
    "I want to buy a gift voucher card",
]
HOURS = [
    "what are the opening hours of the shop",
    "when do you open on sunday",
    "what time does the shop close",
    "are you open on bank holidays",
    "opening times for saturday",
    "until what time are you open tonight",
    "what hours is the store open",
    "when does the shop open in the morning",
]
KLARNA = [
    "can I pay with klarna",
    "do you take klarna payments",
    "is klarna available at checkout",
    "pay later with klarna possible",
    "klarna instalments for my order",
    "does the checkout accept klarna",
    "I want to split the payment with klarna",
    "klarna pay in 3 option",
]


# A multi-label hotel project (labels `a|b`; "" = no intent).
HOTEL_ROWS = [
    ("cancel my booking", "cancel"),
    ("I need to cancel the reservation", "cancel"),
    ("please cancel my stay", "cancel"),
    ("cancel it", "cancel"),
    ("I want a refund", "refund"),
    ("give me my deposit back", "refund"),
    ("refund the payment", "refund"),
    ("money back please", "refund"),
    ("is breakfast included", "breakfast"),
    ("what time is breakfast", "breakfast"),
    ("do you serve breakfast", "breakfast"),
    ("breakfast options", "breakfast"),
    ("can I park my car", "parking"),
    ("is there parking at the hotel", "parking"),
    ("how much is parking", "parking"),
    ("parking for two cars", "parking"),
    ("cancel my booking and refund the deposit", "cancel|refund"),
    ("cancel and give me my money back", "cancel|refund"),
    ("refund me and cancel the room", "cancel|refund"),
    ("is breakfast included and can I park", "breakfast|parking"),
    ("parking and breakfast prices", "breakfast|parking"),
    ("thanks, that is all", ""),  # "no intent": a negative for every intent
    ("ok great", ""),
]
HOTEL_TEST = [
    ("please cancel the booking", "cancel"),
    ("I would like my money back", "refund"),
    ("when is breakfast served", "breakfast"),
    ("where do I park", "parking"),
    ("cancel the room and refund me", "cancel|refund"),
    ("thank you so much", ""),
]


# 4 intents x 4 examples for encoder training; the test utterances are other phrasings.
FIT_DATA = {
    "card_lost": ["I lost my card", "my card is missing", "can't find my bank card", "card gone"],
    "balance": ["what is my balance", "how much money do I have", "show my balance", "funds left?"],
    "transfer": ["send money to John", "make a transfer", "wire 50 to my friend", "pay my sister"],
    "greeting": ["hello there", "hi", "good morning", "hey bot"],
}
FIT_TEST = {
    "card_lost": ["I think someone stole my card", "where is my card"],
    "balance": ["how much is in my account", "account balance please"],
    "transfer": ["transfer 20 dollars to mum", "I want to send cash"],
    "greeting": ["hey", "good evening"],
}
FIT_TEXTS = [t for ts in FIT_DATA.values() for t in ts]
FIT_LABELS = [(k,) for k, ts in FIT_DATA.items() for _ in ts]


def merge_bomb(depth: int) -> bytes:
    """The red team's file: each level merges the level below ten times (577 bytes at depth 8;
    PyYAML's constructor took 18 s and 261 MB for it, > 150 s and 1.7 GB at depth 9)."""
    lines = ["x0: &x0 {text: hi}"]
    for d in range(1, depth + 1):
        merges = ", ".join(f"*x{d - 1}" for _ in range(10))
        lines.append(f"x{d}: &x{d} {{<<: [{merges}]}}")
    lines += ["nlu:", "- intent: greet", "  examples:", f"  - *x{depth}"]
    return ("\n".join(lines) + "\n").encode()
