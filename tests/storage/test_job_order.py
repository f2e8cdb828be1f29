"""The order in which queued jobs are taken (issue 73 item 6): a request someone made goes ahead of
every automatic job, whoever's, and users take turns, so one user's automatic retrains over many
projects push another user's job back by at most the one running; on SQLite and PostgreSQL."""

from __future__ import annotations

import os

from storage import jobs
from storage.job_order import fairest_queued
from storage.projects import create_project
from storage.users import create_user
from storage.utterances import add_utterance


def _projects(db, n: int) -> list[int]:
    with db.session() as s:
        return [create_project(s, f"p{i}").id for i in range(n)]


def _take_turns(db) -> list[int]:
    """Run every queued job in the order a worker takes them (each claimed, then ended)."""
    taken = []
    while True:
        with db.write() as s:
            job_id = fairest_queued(s)
            if job_id is None:
                return taken
            assert jobs.claim_job(s, job_id, pid=os.getpid()) is not None
        with db.write() as s:
            jobs.finish_job(s, job_id, "succeeded", "done")
        taken.append(job_id)


def test_a_manual_request_goes_first_then_users_take_turns_then_first_asked(db):
    with db.session() as s:
        ana, ben, cy = (create_user(s, n, "designer", "x").id for n in ("ana", "ben", "cy"))
    p = _projects(db, 6)
    with db.write() as s:
        a1, a2, a3 = (
            jobs.create_job(s, pid, {}, user_id=ana, trigger="auto")[0].id for pid in p[:3]
        )
        b1 = jobs.create_job(s, p[3], {}, user_id=ben, trigger="auto")[0].id
        a4 = jobs.create_job(s, p[4], {}, user_id=ana, trigger="auto")[0].id
        c1 = jobs.create_job(s, p[5], {}, user_id=cy, trigger="manual")[0].id
    # cy's request first (manual, though asked last); ana's first job, then ben's: neither had a
    # turn yet, so first asked; then ben has had his, and ana's go on in the order asked
    assert _take_turns(db) == [c1, a1, b1, a2, a3, a4]


def test_a_user_whose_job_ran_last_waits_for_the_others(db):
    with db.session() as s:
        ana, ben = (create_user(s, n, "designer", "x").id for n in ("ana", "ben"))
    p = _projects(db, 3)
    with db.write() as s:
        a1 = jobs.create_job(s, p[0], {}, user_id=ana, trigger="auto")[0].id
        jobs.claim_job(s, a1, pid=os.getpid())  # ana's job runs
        a2 = jobs.create_job(s, p[1], {}, user_id=ana, trigger="auto")[0].id
        b1 = jobs.create_job(s, p[2], {}, user_id=ben, trigger="auto")[0].id  # asked after a2
        jobs.finish_job(s, a1, "succeeded", "done")
        assert fairest_queued(s) == b1  # ana just had her turn
    # a cancelled job never starts; with nothing queued there is nothing to take
    with db.write() as s:
        jobs.request_cancel(s, b1)
        jobs.request_cancel(s, a2)
        assert fairest_queued(s) is None


def test_an_automatic_job_counts_for_whoever_labelled_its_project_last(db):
    """Nobody asks for an automatic retrain: it takes the turn of whoever labelled its project
    last before it was queued."""
    with db.session() as s:
        ana, ben = (create_user(s, n, "designer", "x").id for n in ("ana", "ben"))
    p = _projects(db, 3)
    with db.write() as s:
        for pid, who in zip(p, (ana, ana, ben), strict=True):
            add_utterance(s, pid, f"lost my card {pid}", ["card_lost"], user_id=who)
        a0 = jobs.create_job(s, p[0], {}, trigger="auto")[0].id
        jobs.claim_job(s, a0, pid=os.getpid())  # ana's turn
        a1 = jobs.create_job(s, p[1], {}, trigger="auto")[0].id
        b2 = jobs.create_job(s, p[2], {}, trigger="auto")[0].id  # queued after a1
        assert fairest_queued(s) == b2  # ben has not had his turn
        jobs.finish_job(s, a0, "succeeded", "done")
    assert _take_turns(db) == [b2, a1]
