"""A study's Tuner run to its end, and the study's MLflow record completed: missing runs
synced from Tune's storage, runs left open closed, runs of trials the scheduler stopped
tagged, and the study's own numbers on its parent run (`StudyOutcome` says how it went). A
full disk, or a run that does not return, marks the parent run KILLED instead."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from raystudy.disk_full import free_space, is_disk_full
from raystudy.keys import STUDY_FINISHED, STUDY_STOPPED, STUDY_WALL_S
from raystudy.spec import StudySpec
from raystudy.study.folder import StudyError, StudyInfo
from raystudy.study.records import run_records
from raystudy.study.setup import as_study_error
from raystudy.tags import (
    BY_ASHA,
    RUN_FAILED,
    RUN_FINISHED,
    RUN_KILLED,
    STOPPED_TAG,
    VERSION_TAG,
)
from raystudy.tracking.retry import TrackingUnreachable
from raystudy.tracking.study_run import StudyTracker
from raystudy.tracking.sync import sync_run
from raystudy.tune.optuna_storage import close_orphan_optuna_trials, optuna_storage_url
from raystudy.tune.progress import FullDiskWatch
from raystudy.tune.state import FINISHED, STOPPED, TUNE_DIR, fit_outcomes
from raystudy.tune.stopping import stop_on_full_disk, time_budget
from raystudy.version import code_version


@dataclass(frozen=True)
class StudyOutcome:
    info: StudyInfo
    states: dict[str, int]
    wall_s: float
    #: Set when the tracking store could not be reached at the end: finished trials whose
    #: runs it lacks are then only in Tune's storage (`raystudy resume` logs them).
    tracking_error: str | None = None
    #: Finished trials whose MLflow runs were completed from Tune's storage at the end.
    synced: int = 0

    @property
    def ok(self) -> bool:
        """Every trial is done: finished, or stopped on purpose by the scheduler."""
        return self.done == self.info.num_tune_trials

    @property
    def done(self) -> int:
        return self.states.get(FINISHED, 0) + self.states.get(STOPPED, 0)


def fit_study(
    tracker: StudyTracker, info: StudyInfo, tuner: Any, spec: StudySpec, started: float
) -> StudyOutcome:
    """Run the Tuner within the study's time budget, then complete the study's record; a run
    that does not return marks the parent run KILLED."""
    watch: FullDiskWatch | None = None
    try:
        with time_budget(spec.execution.time_budget_s), stop_on_full_disk() as watch:
            states, stopped = fit_outcomes(tuner.fit())
    except BaseException as exc:
        # On a full disk Tune can fail in its own bookkeeping too (an error file it could
        # not write, read back empty): the full disk is what the user has to know.
        if (watch is not None and watch.failure is not None) or is_disk_full(exc):
            raise _disk_full(tracker, info, watch) from exc
        mark_killed(tracker)
        raise
    if watch.failure is not None:
        raise _disk_full(tracker, info, watch)
    if spec.search.method == "optuna" and StudyOutcome(info, states, 0.0).ok:
        # Every trial has ended: a trial still RUNNING in Optuna's storage lost its Tune trial
        # with a killed driver.
        as_study_error(
            close_orphan_optuna_trials, optuna_storage_url(spec, info.study_dir), spec.name
        )
    return _finish(tracker, info, states, started, stopped)


def _disk_full(tracker: StudyTracker, info: StudyInfo, watch: FullDiskWatch | None) -> StudyError:
    """The error of a study stopped by a full disk. Its parent run is marked KILLED where the
    store can still write; if not, `resume` reopens it as it is."""
    with contextlib.suppress(Exception):
        tracker.finish(RUN_KILLED)
    failure = watch.failure if watch is not None else None
    where = f" (trial {failure.name}: {failure.error})" if failure is not None else ""
    return StudyError(
        f"a disk the study writes to is full (its folder {info.study_dir} has "
        f"{free_space(info.study_dir)} free){where}, so the study stopped. What was recorded "
        f"before is kept (finished trials, in MLflow and in Tune's storage); make space, then "
        f"`raystudy resume {info.name}` runs the rest"
    )


def mark_killed(tracker: StudyTracker) -> None:
    # The study's own error matters more than a parent run left RUNNING on a lost server.
    with contextlib.suppress(TrackingUnreachable):
        tracker.finish(RUN_KILLED)


def _finish(
    tracker: StudyTracker,
    info: StudyInfo,
    states: dict[str, int],
    started: float,
    stopped: Sequence[str] = (),
) -> StudyOutcome:
    """Complete the MLflow record of the study; say so instead when its store is unreachable."""
    wall_s = time.monotonic() - started
    ok = StudyOutcome(info, states, wall_s).ok
    try:
        synced = sync_from_tune(tracker, info)
        # Every trial has stopped by now: a run still open lost its process mid-way.
        tracker.close_running_trials()
        tracker.tag_killed_trials(stopped, STOPPED_TAG, BY_ASHA)
        tracker.log_metrics(
            {
                STUDY_FINISHED: states.get(FINISHED, 0),
                STUDY_STOPPED: states.get(STOPPED, 0),
                STUDY_WALL_S: wall_s,
            }
        )
        tracker.finish(RUN_FINISHED if ok else RUN_FAILED)
    except TrackingUnreachable as exc:
        return StudyOutcome(info, states, wall_s, tracking_error=str(exc))
    return StudyOutcome(info, states, wall_s, synced=synced)


def sync_from_tune(tracker: StudyTracker, info: StudyInfo) -> int:
    """Log to MLflow every finished trial whose run is missing or incomplete there (its
    store was unreachable while it ran), from what Tune's storage recorded of it; returns
    how many runs were completed. Runs that finished normally are not touched."""
    if not (info.study_dir / TUNE_DIR).is_dir():
        return 0
    # Runs are named like their trial's folder: finished ones are not even read from disk.
    done = {name for name, status in tracker.trial_statuses().items() if status == RUN_FINISHED}
    version = code_version()
    synced = 0
    for record in run_records(info.study_dir, skip=done):
        record = dataclasses.replace(record, tags={**record.tags, VERSION_TAG: version})
        synced += sync_run(info.tracking_uri, info.experiment_id, info.parent_run_id, record)
    return synced
