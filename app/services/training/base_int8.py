"""The base encoder's int8 copy (issue 63 item 5): a project that was never retrained serves
its base encoder, which took torch in fp32 (a cold ``predict`` of 1,000 lines: 19 s on an AVX2
CPU) where a retrained project's int8 copy needs no torch. The copy is built once per base
encoder's weights (:func:`app.serving.int8.base_int8_rel`), its parity checked like a version's
(:func:`app.services.models.int8.export_version_int8`: the top intent of at most 1,000 test
questions against the fp32 encoder's, on the rows of the project that asked first, which its
record names: ``checked_on``), and served
by the same rule as a version's copy (:meth:`app.serving.models.Models.base_serving`). A copy
that fails parity is recorded as such and never served; a project too small to check parity on
builds nothing (the next one may).

Who builds it: a training worker when it warms up (for the projects it will train), and
``intent-studio predict`` when it lacks it (once; later calls need no torch). Building moves
the pool stamp of the projects that serve that base, so every process switches to it."""

from __future__ import annotations

import json
import logging
from typing import Any

from app.access import ProjectHandle
from app.project_settings import as_encoded
from app.services.models.int8 import export_version_int8
from app.serving.int8 import BASE_RECORD, INT8_DIR, base_int8_record, base_int8_rel
from app.serving.live import LivePools
from core.evaluation import EvalData
from core.multilabel.rule import is_multilabel
from storage.db import WHOLE
from storage.utterances import list_utterances
from storage.versions import touch_unretrained

logger = logging.getLogger(__name__)


class _TooFew(Exception):
    """The project's rows cannot check parity: nothing is recorded."""


def ensure_base_int8(live: LivePools, p: ProjectHandle) -> dict[str, Any] | None:
    """The int8 copy's record of ``p``'s base encoder, built now with parity on ``p``'s rows
    when there is none (None: ``p`` cannot check it: too few test questions, multi-label)."""
    artifacts = live.models.artifacts
    record = base_int8_record(artifacts, p.base_encoder)
    if record is not None:
        return record
    with live.db.session() as s:
        rows = as_encoded(list_utterances(s, p.id), p.settings)
    data = EvalData.from_rows(rows)
    if not data.train_texts or is_multilabel(data.train_labels):
        return None
    encoder = live.models.base_encoder(p.base_encoder)
    rel = base_int8_rel(p.base_encoder)
    try:
        with artifacts.writing(rel) as folder:
            info = export_version_int8(encoder, data, folder / INT8_DIR, cached=live.cache.encode)
            if info.get("unchecked"):
                raise _TooFew
            # every never-retrained project on this base serves it: say whose rows checked it
            info["checked_on"] = {"project": p.name, "questions": info.get("n")}
            (folder / BASE_RECORD).write_text(json.dumps(info, indent=2), "utf-8")
    except _TooFew:
        return None
    except OSError:  # another process built it meanwhile: its record stands
        return base_int8_record(artifacts, p.base_encoder)
    with live.db.write(WHOLE) as s:
        moved = touch_unretrained(s, p.base_encoder)
    logger.info(
        "int8 copy of %s built (%s); %d project(s) serving it switch",
        p.base_encoder,
        info.get("reason"),
        moved,
    )
    return info
