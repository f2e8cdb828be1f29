"""The stakeholder report of a project's active model: gathers the numbers, maps and evidence
from the other services and hands plain data to :mod:`app.report`, which renders it."""

from __future__ import annotations

import json
import logging
import re
import shutil
import threading
import time
import weakref
from pathlib import Path
from typing import Any

from app.access import ProjectHandle, open_project
from app.report import ReportData, write_report
from app.services.design import maps as map_svc
from app.services.labelling import team_answers
from app.services.models import version_files
from app.services.models import versions as versions_svc
from app.services.models.evaluation import live_evaluation, test_predictions
from app.services.models.versions import ACTIVE, BASE, Version
from app.services.projects import accounts as security
from app.services.projects import projects as project_svc
from app.services.projects.downloads import download_path
from app.serving.factories import FactoryBuilder
from app.serving.live import LivePools
from app.serving.map_store import MapStore
from app.serving.state import ServingState
from core.retrieval.scope import in_scope_labels
from storage import datasets
from storage.db import Database
from storage.errors import BusyError
from storage.pool_state import pool_stamp

EVIDENCE_CARDS = 6
MISSES = 3  # intents whose failures get an example in the summary
SINGLE_LABEL_KEYS = ("accuracy", "macro_f1")
MULTI_LABEL_KEYS = ("micro_f1", "macro_f1", "exact_match")
SLICE = 512  # questions decided at a time (their evidence in memory)
# Unlabelled utterances drawn on the report's maps at most (a seeded sample; all labelled ones
# are): their vectors in both spaces are a cost the picture does not need, at 100,000 rows most
# of the report's memory and file.
REPORT_UNLABELLED = 300

logger = logging.getLogger(__name__)


def _from_test_split(
    factories: FactoryBuilder, p: ProjectHandle, per_intent: dict[str, float]
) -> tuple[list[int], dict[str, tuple[str, str]]]:
    """Evidence cards (half the hardest test cases, half clear hits) and, for the intents that
    fail most, their most confident miss."""
    _, preds = test_predictions(factories, p, ACTIVE)
    hard = sorted(preds, key=lambda x: (x.correct, x.margin))[: EVIDENCE_CARDS // 2]
    easy = sorted((x for x in preds if x.correct), key=lambda x: -x.margin)
    clear = [x.id for x in easy if x.id not in {h.id for h in hard}]
    # a clear hit first, then a hard case, and so on
    chosen = [i for pair in zip(clear, [x.id for x in hard], strict=False) for i in pair]
    chosen += [i for i in [*clear, *(x.id for x in hard)] if i not in chosen]
    chosen = chosen[:EVIDENCE_CARDS]
    misses: dict[str, tuple[str, str]] = {}
    for x in sorted((x for x in preds if not x.correct), key=lambda x: -x.margin):
        misses.setdefault(x.gold_for_scoring, (x.text, x.predicted))
    worst = sorted(per_intent, key=lambda k: (per_intent[k], k))[:MISSES]
    return chosen, {k: misses[k] for k in worst if k in misses}


def _from_pool(
    factories: FactoryBuilder,
    p: ProjectHandle,
    rows: list[Any],
    per_intent: dict[str, float],
    version: Version,
) -> tuple[list[dict[str, Any]], dict[str, tuple[str, str]]]:
    """No test split: one training example of each of the worst and best intents, each
    predicted without itself (as cross-validation does); their misses for the summary."""
    ranked = sorted(per_intent, key=lambda k: (per_intent[k], k))
    half = EVIDENCE_CARDS // 2
    intents = list(dict.fromkeys([*ranked[:half], *ranked[::-1][:half]]))
    cards, misses = [], {}
    for intent in intents:
        row = next((r for r in rows if r.split == "train" and intent in r.labels), None)
        if row is None:
            continue
        card = map_svc.explain_utterance(factories, p, row.id, version=version)
        cards.append(card)
        if card.get("correct") is False and card.get("predicted"):
            misses[intent] = (row.text, str(card["predicted"]))
    return cards, misses


def _fallback(
    live: LivePools, p: ProjectHandle, pid: int, rows: list[Any], cross_validated: bool
) -> tuple[float | None, int]:
    """(the out-of-scope target, how many test questions the live model answers with no
    intent): the same decision as Try, the API and bundles."""
    target = project_svc.out_of_scope(live, p)["target_recall"]
    tests = [r.text for r in rows if r.split == "test" and r.labels]
    if target is None or cross_validated or not tests:
        return target, 0
    pool = live.pool(pid)
    if len(pool.index) == 0:
        return target, 0
    vectors = live.cache.encode(pool.encoder, tests)  # the queue's and the evaluation's vectors
    predictor = pool.predictor
    if predictor.head is None and not predictor.multi_label:  # the decision without evidence
        return target, sum(predictor.no_intent(vectors))
    fallback = 0
    for start in range(0, len(tests), SLICE):  # the evidence of a slice at a time in memory
        part = slice(start, start + SLICE)
        decided = pool.predictor.predict_vectors(tests[part], vectors[part], k=1, show=1)
        fallback += sum(1 for public, _ in decided if public.get("oos"))
    return target, fallback


def _filename(project: str, version: str, static: bool) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", project).strip("-") or "project"
    kind = "-static" if static else ""
    return f"{safe}-{version.replace(' ', '-')}{kind}-{time.strftime('%Y%m%d-%H%M%S')}.html"


class _Made:
    """The reports of one app context: one lock per project (one report of a project is built
    at a time) and the newest report of each project and kind (static or not) with what it was
    made from. Kept per kind so that asking for the two kinds in turn builds each once, not at
    every request (a viewer may ask: the cost anyone causes is one build per project state and
    kind)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.building: dict[int, threading.Lock] = {}
        self.made: dict[tuple[int, bool], tuple[tuple[Any, ...], Path]] = {}

    def project_lock(self, pid: int) -> threading.Lock:
        with self.lock:
            return self.building.setdefault(pid, threading.Lock())


_made: weakref.WeakKeyDictionary[ServingState, _Made] = weakref.WeakKeyDictionary()
_made_lock = threading.Lock()


def _reports(serving_state: ServingState) -> _Made:
    with _made_lock:
        return _made.setdefault(serving_state, _Made())


def _inputs(maps: MapStore, p: ProjectHandle, static: bool) -> tuple[int, tuple[Any, ...]]:
    """The project's id and what its report is made of: the pool's stamp (labels, utterances,
    intents, settings, the active version), the team's agreement, whether the maps' UMAP
    projections are there yet, and the kind of report."""
    pid = p.id
    with maps.db.session() as s:
        stamp = pool_stamp(s, pid)
    team = json.dumps(team_answers.report_view(maps.db, p), sort_keys=True, default=str)
    # a UMAP projection landed since: the maps are drawn anew with it (the PCA ones a build
    # itself stores do not count, or a first interactive report would never be the same again)
    root = maps.root
    umap = () if static or not root.is_dir() else root.glob("*__umap__*.npz")
    drawn = tuple(sorted(f.name for f in umap))
    return pid, (stamp, team, drawn, static)


def build_report(
    serving_state: ServingState, p: ProjectHandle, out: Path | None = None, *, static: bool = False
) -> Path:
    """Write the report HTML file and return its path.

    Args:
        serving_state: the app context.
        p: the project, as the request resolved it.
        out: the ``.html`` to write; by default a fresh file among the downloads
            (:func:`app.services.projects.downloads.download_path`: swept after a day).
        static: no script at all (HTML tables and bars, no maps); see :func:`app.report.render_report`.

    Maps use the cached UMAP projection when there is one, else PCA (instant), so the button
    never waits for a projection to compile; they draw the labelled utterances and a sample of
    :data:`REPORT_UNLABELLED` others.

    One report of a project is built at a time (a second request waits for the first); a
    report of a project whose data, settings, active version, team agreement and maps are
    unchanged since its last report of that kind (static or not) is that report again (copied
    to ``out`` when one is given), not built again. A viewer may ask for it (the table of roles in
    docs/user-guide.md: viewers download the report); what anyone's requests cost is one build
    per state of the project and kind, never two of a project at once.
    """
    reports = _reports(serving_state)
    pid, made_of = _inputs(serving_state.maps, p, static)
    with reports.project_lock(pid):
        p = open_project(
            serving_state.db, p.id, p.actor
        )  # what the report waited for may have moved
        pid, made_of = _inputs(serving_state.maps, p, static)
        last = reports.made.get((pid, static))
        if last is not None and last[0] == made_of and last[1].is_file():
            if out is None or Path(out) == last[1]:
                return last[1]
            Path(out).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(last[1], out)
            return Path(out)
        path = _build(serving_state, p, out, static=static)
        reports.made[(pid, static)] = (made_of, path)
    security.record(
        serving_state.db, "report_built", f"{p.name!r}{' (static)' if static else ''}", who=p.actor
    )
    if p.active_version_id is not None:  # the retention rule keeps a reported version's files
        mark_reported(serving_state.db, p, p.active_version_id)
    return path


def mark_reported(db: Database, p: ProjectHandle, version: int) -> None:
    """Record that ``version`` was reported, so the retention rule keeps its files. The report is
    made already: a mark the database's lock refused (busy past its timeout: seen once on a
    loaded machine) is logged, never the reader's error."""
    try:
        version_files.exported(db, p, version)
    except BusyError:
        logger.warning(
            "The report of %r was made, but v%s could not be marked exported (the database was "
            "busy): the retention rule keeps its files only while it serves or is among the "
            "newest versions",
            p.name,
            version,
        )


def _sampled(maps: MapStore, p: ProjectHandle, version: Version, method: str) -> Any:
    return map_svc.sampled_map(
        maps, p, version=version, unlabelled=REPORT_UNLABELLED, method=method
    )


def version_note(db: Database, p: ProjectHandle) -> str:
    """How the active version came to be, in the report's words ("" when it is plain): retrained
    automatically after new labels, and the checkpoint it holds when it is not its job's last."""
    if p.active_version_id is None:
        return ""
    row = next((r for r in versions_svc.history(db, p) if r["version"] == p.active_version_id), {})
    words = ["retrained automatically after new labels"] if row.get("trigger") == "auto" else []
    steps, of = row.get("steps"), row.get("of_steps")
    if steps and of and steps < of:
        words.append(f"first pass, step {steps} of {of}")
    return "; ".join(words)


def _build(
    serving_state: ServingState, p: ProjectHandle, out: Path | None, *, static: bool
) -> Path:
    dataset_hash, rows = datasets.current(serving_state.db, p.id)
    # the active version by its id: scored, chosen and explained in the space its metrics were
    active: Version = p.active_version_id or BASE
    version = f"v{p.active_version_id}" if p.active_version_id else "frozen base"
    after = live_evaluation(serving_state.factories, p, ACTIVE, cross_validate=True)
    before = live_evaluation(serving_state.factories, p, BASE, cross_validate=True)
    keys = MULTI_LABEL_KEYS if after.multi_label else SINGLE_LABEL_KEYS
    per_intent = after.f1_by_intent()
    cross_validated = str(after.split or "test").startswith("cv")
    if cross_validated:
        evidence, misses = _from_pool(serving_state.factories, p, rows, per_intent, active)
    else:
        ids, misses = _from_test_split(serving_state.factories, p, per_intent)
        evidence = [
            map_svc.explain_utterance(serving_state.factories, p, i, version=active) for i in ids
        ]
    map_before = map_after = None
    if not static:  # the labelled rows and a sample of the others (REPORT_UNLABELLED)
        views = [_sampled(serving_state.maps, p, v, "umap") for v in (BASE, ACTIVE)]
        if any(v is None for v in views):  # both UMAP (cached) or both PCA
            views = [_sampled(serving_state.maps, p, v, "pca") for v in (BASE, ACTIVE)]
        map_before, map_after = views
    space = ("silhouette", "alignment", "uniformity")
    confusion = after.confusion
    data = ReportData(
        project=p.name,
        model_version=version,
        version_note=version_note(serving_state.db, p),
        dataset_hash=dataset_hash[:16],
        metrics={k: v for k in keys if (v := after.value(k)) is not None},
        baseline_metrics={k: v for k in keys if (v := before.value(k)) is not None},
        primary=after.primary,
        evaluated_on=after.split or "test",
        n_evaluated=after.n or 0,
        n_examples=sum(1 for r in rows if r.split == "train" and r.labels),
        # out_of_scope is no intent (the answer that none applies), as the header counts them
        n_intents=len(
            set(in_scope_labels(i for r in rows if r.split == "train" for i in r.labels))
        ),
        is_baseline=p.active_version_id is None,
        per_intent_f1=per_intent,
        baseline_per_intent_f1={k: v for k, v in before.f1_by_intent().items() if k in per_intent},
        misses=misses,
        confusion_labels=list(confusion.get("labels", [])),
        confusion_matrix=confusion.get("matrix"),
        map_before=map_svc.map_data(map_before) if map_before else None,
        map_after=map_svc.map_data(map_after) if map_after else None,
        space_before={k: map_before.metrics[k] for k in space} if map_before else {},
        space_after={k: map_after.metrics[k] for k in space} if map_after else {},
        evidence=evidence,
    )
    data.oos_target, data.fallback = _fallback(serving_state.live, p, p.id, rows, cross_validated)
    data.team = team_answers.report_view(serving_state.db, p)
    path = out or download_path(serving_state.settings, _filename(p.name, version, static), p.id)
    return write_report(data, path, static=static)
