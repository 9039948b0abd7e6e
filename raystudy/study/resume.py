"""Resuming an interrupted study from Tune's saved state: its damaged state files put back
from their copies, what would refuse it (a damaged state, a store that is down, no state at
all) said before Ray starts, then the Tuner restored and run to its end
(`raystudy.study.outcome`)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from raystudy.study.folder import (
    STUDY_FILE,
    StoreUnavailable,
    StudyError,
    StudyInfo,
    load_study_spec,
)
from raystudy.study.lock import driver_lock, refuse_if_driven
from raystudy.study.outcome import StudyOutcome, fit_study, mark_killed
from raystudy.study.setup import as_study_error, study_context, trial_resources
from raystudy.tracking.retry import TrackingRejected, TrackingUnreachable
from raystudy.tracking.study_run import StudyTracker
from raystudy.tune.cluster import connect
from raystudy.tune.restore import can_restore, restored_tuner
from raystudy.tune.state import TUNE_DIR, TuneStateError, tune_outcomes
from raystudy.tune.state_backup import BACKUP_DIR, restore_damaged
from raystudy.version import code_version


def resume_study(
    study_dir: Path,
    *,
    address: str | None = None,
    restart_errored: bool = False,
) -> StudyOutcome:
    """Finish an interrupted study: unfinished trials continue from their last checkpoint,
    finished ones are not run again; errored ones resume (or restart from scratch)."""
    started = time.monotonic()
    # A `run` takes the lock before it writes study.json: a study being created is busy,
    # not missing.
    refuse_if_driven(study_dir, "resume")
    info = StudyInfo.read(study_dir)
    with driver_lock(study_dir, "resume"):
        return _resume(study_dir, info, started, address, restart_errored)


def _resume(
    study_dir: Path, info: StudyInfo, started: float, address: str | None, restart_errored: bool
) -> StudyOutcome:
    spec = load_study_spec(study_dir, check_data=True)
    tune_dir = study_dir / TUNE_DIR
    restore_tune_state(study_dir)
    try:
        # Read before Ray starts: a damaged state is said naming its file, not by Tune.
        tune_outcomes(tune_dir)
    except TuneStateError as exc:
        raise StudyError(str(exc).replace("STUDY", info.name)) from None
    try:
        # Found by reading only, so that a store that is down is said before Ray starts
        # (and before a missing Tune state, whose remedy needs the store too).
        tracker = StudyTracker.attach(info.tracking_uri, info.experiment_id, info.parent_run_id)
    except TrackingUnreachable as exc:
        raise _resume_unreachable(exc, info) from exc
    except TrackingRejected as exc:
        raise StoreUnavailable(f"{exc} (recorded in {study_dir / STUDY_FILE})") from None
    if not can_restore(tune_dir):
        raise StudyError(
            f"{tune_dir} holds no Tune state to resume (the study stopped before its first "
            f"trial started); run it again with `raystudy run --overwrite`"
        )
    as_study_error(connect, address)
    resources = trial_resources(spec)
    try:
        tracker.reopen()
    except TrackingUnreachable as exc:
        raise _resume_unreachable(exc, info) from exc
    try:
        context = study_context(spec, info, code_version(), resources)
        tuner = restored_tuner(spec, tune_dir, context, restart_errored=restart_errored)
    except BaseException:
        mark_killed(tracker)
        raise
    return fit_study(tracker, info, tuner, spec, started)


def restore_tune_state(study_dir: Path) -> None:
    """Put back the last whole copy of each of Tune's state files that is damaged (a full
    disk cuts them short: `raystudy.tune.state_backup`), saying so on stderr."""
    tune_dir = study_dir / TUNE_DIR
    changed = restore_damaged(tune_dir)
    if changed:
        print(
            f"Warning: Tune's saved state in {tune_dir} was damaged (cut short by a full "
            f"disk?); put back the last whole copy kept in {tune_dir / BACKUP_DIR} "
            f"({', '.join(changed)}). Trials that finished after it are found finished in "
            "MLflow, not trained again",
            file=sys.stderr,
            flush=True,
        )


def _resume_unreachable(exc: TrackingUnreachable, info: StudyInfo) -> StudyError:
    return StoreUnavailable(
        f"{exc}: start it and resume again; meanwhile `raystudy analyze {info.name} "
        "--from-tune` reads the finished trials from Tune's storage"
    )
