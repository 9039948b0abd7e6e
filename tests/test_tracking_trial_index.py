"""The trial-id index (raystudy/tracking/trial_index.py) in real sqlite and PostgreSQL stores:
made when a study starts or resumes, used by the search each trial makes for its run."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlalchemy

from raystudy.tags import TRIAL_ID_TAG
from raystudy.tracking.study_run import StudyTracker
from raystudy.tracking.trial_index import TRIAL_ID_INDEX, ensure_trial_id_index
from raystudy.tracking.trial_run import TrialRun


def _open(uri: str, tracker: StudyTracker, trial_id: str) -> TrialRun:
    return TrialRun.open(uri, tracker.experiment_id, trial_id, trial_id, {"a": 1}, {})


def test_a_sqlite_study_gets_the_index_and_its_trials_search_through_it(tmp_path: Path) -> None:
    db = tmp_path / "mlflow.db"
    uri = f"sqlite:///{db}"
    tracker = StudyTracker.start(uri, "s", tmp_path / "mlartifacts", tags={})
    con = sqlite3.connect(db)
    names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert TRIAL_ID_INDEX in names
    plan = con.execute(
        "EXPLAIN QUERY PLAN SELECT run_uuid FROM tags WHERE key = ? AND value = ?",
        (TRIAL_ID_TAG, "t1"),
    ).fetchall()
    assert any(TRIAL_ID_INDEX in str(row) for row in plan), plan
    # The trial finds its own run again (a retry), and only its own.
    first = _open(uri, tracker, "t1")
    other = _open(uri, tracker, "t2")
    assert _open(uri, tracker, "t1").run_id == first.run_id != other.run_id
    # A store whose index was dropped (made by an older raystudy) gets it on resume.
    con.execute(f"DROP INDEX {TRIAL_ID_INDEX}")
    con.commit()
    StudyTracker.attach(uri, tracker.experiment_id, tracker.parent_run_id)
    names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert TRIAL_ID_INDEX in names


def test_postgres_gets_the_index_concurrently_and_a_server_store_is_left_alone(
    postgres, tmp_path: Path
) -> None:
    if not postgres.running():
        postgres.start()
    uri = postgres.create_database("indexed")
    tracker = StudyTracker.start(uri, "s", tmp_path / "mlartifacts", tags={})
    engine = sqlalchemy.create_engine(uri)
    query = sqlalchemy.text("SELECT indexdef FROM pg_indexes WHERE indexname = :n")
    with engine.connect() as con:
        made = con.execute(query, {"n": TRIAL_ID_INDEX}).scalar_one()
    assert "ON public.tags" in made and f"WHERE ((key)::text = '{TRIAL_ID_TAG}'" in made, made
    first = _open(uri, tracker, "t1")
    assert _open(uri, tracker, "t1").run_id == first.run_id
    assert ensure_trial_id_index(uri)  # idempotent
    engine.dispose()
    assert not ensure_trial_id_index("http://127.0.0.1:1")  # a server's database is its own


@pytest.mark.parametrize("uri", ["mysql://u@127.0.0.1:1/db", "databricks"])
def test_stores_without_partial_indexes_are_not_touched(uri: str) -> None:
    assert not ensure_trial_id_index(uri)
