"""Running a study under Ray Tune, and resuming one: its lifecycle from the driver's side.

`run_study` asks first what can refuse the study, in order of cost (the output folder, the
Optuna and tracking stores, Ray, the trial's resources), then makes the study folder, the MLflow
parent run and the Tuner (`raystudy.tune.adapter`), runs it, and completes the MLflow record:
missing runs synced from Tune's storage, runs left open closed, runs of trials the scheduler
stopped tagged. `resume_study` continues an interrupted study from Tune's saved state.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

import raystudy
from raystudy.disk_full import free_space, is_disk_full
from raystudy.keys import STUDY_FINISHED, STUDY_STOPPED, STUDY_WALL_S
from raystudy.lineage import PACKAGE_DIR, git_commit
from raystudy.resources import ResourceError
from raystudy.spec import ALLOWED_TRACKING_URIS, StudySpec
from raystudy.study.folder import (
    SPEC_FILE,
    STUDY_FILE,
    ClusterUnavailable,
    StoreUnavailable,
    StudyError,
    StudyInfo,
    check_study_dir,
    load_study_spec,
    make_study_dir,
    remove_new,
)
from raystudy.study.lock import driver_lock, refuse_if_driven
from raystudy.study.records import run_records
from raystudy.tags import (
    BY_ASHA,
    RUN_FAILED,
    RUN_FINISHED,
    RUN_KILLED,
    STOPPED_TAG,
    VERSION_TAG,
)
from raystudy.tracking.retry import TrackingRejected, TrackingUnreachable, TrackingVariableUnset
from raystudy.tracking.study_run import StudyTracker, default_uri
from raystudy.tracking.sync import sync_run
from raystudy.trials.common import StudyContext
from raystudy.tune.adapter import (
    close_orphan_optuna_trials,
    new_tuner,
    optuna_storage_url,
    optuna_study_exists,
    stop_on_full_disk,
    time_budget,
)
from raystudy.tune.cluster import TuneSetupError, connect
from raystudy.tune.probe import cluster_request
from raystudy.tune.progress import FullDiskWatch
from raystudy.tune.restore import can_restore, restored_tuner
from raystudy.tune.state import (
    FINISHED,
    STOPPED,
    TUNE_DIR,
    TuneStateError,
    fit_outcomes,
    tune_outcomes,
)
from raystudy.tune.state_backup import BACKUP_DIR, restore_damaged

T = TypeVar("T")


def _as_study_error(call: Callable[..., T], *args: Any) -> T:
    """`call(*args)`, with Ray or Tune refusing the study's set-up said as a StudyError."""
    try:
        return call(*args)
    except TuneSetupError as exc:
        raise ClusterUnavailable(str(exc)) from None


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


def code_version() -> str:
    """The raystudy version, with the short commit of its checkout when it has one."""
    commit = git_commit(PACKAGE_DIR, short=True)
    return f"{raystudy.__version__}+{commit}" if commit else raystudy.__version__


def trial_resources(spec: StudySpec) -> dict[str, float]:
    """What each trial asks for, fitted to the cluster we are connected to and the node types
    its autoscaler can launch (`raystudy.tune.probe`); StudyError when nothing can hold it."""
    want = spec.resources
    try:
        return cluster_request(want.cpu, want.gpu, want.autoscale, spec.name)
    except ResourceError as exc:
        raise ClusterUnavailable(str(exc)) from None


def check_search_method(spec: StudySpec, source: str | Path, methods: Sequence[str]) -> None:
    """StudyError when the spec read from `source` searches in a way other than `methods`,
    the searches of the command given it (`optimize` runs Optuna searches only)."""
    if spec.search.method not in methods:
        raise StudyError(
            f"{source}: search.method is {spec.search.method!r}; this command runs "
            f"{' or '.join(methods)} searches"
        )


def check_optuna_study(spec: StudySpec, overwrite: bool) -> None:
    """Refuse a new study whose `search.storage` already holds an Optuna study of its name
    (left by an earlier study, in another --output): Optuna would add to it, and its best
    trial and TPE's history would include trials that are no part of this study. Under
    `overwrite` it is deleted when the study starts (`clear_optuna_study`)."""
    if spec.search.method != "optuna" or not spec.search.storage or overwrite:
        return
    if _as_study_error(optuna_study_exists, spec.search.storage, spec.name):
        raise StudyError(
            f"search.storage {spec.search.storage} already holds an Optuna study named "
            f"{spec.name!r}; pass --overwrite to delete it and start again, or give this "
            "study another name"
        )


def run_study(
    spec: StudySpec,
    *,
    output: Path = Path("studies"),
    address: str | None = None,
    overwrite: bool = False,
    verbose: int = 1,
    on_study_dir: Callable[[Path], None] | None = None,
) -> StudyOutcome:
    """Run every trial of `spec` under Ray Tune and wait for the study to end.

    What can refuse the study is asked first, in order of cost (the output folder, the
    tracking store, Ray, the trial's resources); only then are the study folder and the
    MLflow parent run made, so a refused study leaves nothing that blocks a rerun.
    `on_study_dir` is called with the study folder as soon as it exists (the terminal moves
    its log there).
    """
    started = time.monotonic()
    study_dir = check_study_dir(output, spec.name, overwrite)
    if overwrite and study_dir.is_dir():
        refuse_if_driven(study_dir, "overwrite")
    check_optuna_study(spec, overwrite)
    if spec.tracking.uri:  # the default store is made in the study folder, which is ours
        try:
            StudyTracker.check(spec.tracking.uri, spec.name)
        except (TrackingUnreachable, TrackingRejected) as exc:
            raise _tracking_error(exc) from None
    _as_study_error(connect, address)
    resources = trial_resources(spec)
    version = code_version()
    tracker, info, tuner, lock = _start(
        spec, study_dir, overwrite, version, resources, verbose, on_study_dir
    )
    with lock:
        return _fit(tracker, info, tuner, spec, started)


def _fit(
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
        _mark_killed(tracker)
        raise
    if watch.failure is not None:
        raise _disk_full(tracker, info, watch)
    if spec.search.method == "optuna" and StudyOutcome(info, states, 0.0).ok:
        # Every trial has ended: a trial still RUNNING in Optuna's storage lost its Tune trial
        # with a killed driver.
        _as_study_error(
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


def _tracking_error(exc: TrackingUnreachable | TrackingRejected) -> StudyError:
    if isinstance(exc, TrackingUnreachable):
        return StoreUnavailable(f"{exc}: start the server (or fix tracking.uri) and run again")
    if isinstance(exc, TrackingVariableUnset):
        return StudyError(str(exc))
    return StoreUnavailable(f"{exc}; allowed: {ALLOWED_TRACKING_URIS}")


def _start(
    spec: StudySpec,
    study_dir: Path,
    overwrite: bool,
    version: str,
    resources: dict[str, float],
    verbose: int,
    on_study_dir: Callable[[Path], None] | None,
) -> tuple[StudyTracker, StudyInfo, Any, contextlib.ExitStack]:
    """The study folder (with its driver lock taken: the returned stack releases it), its
    files, the MLflow parent run and the Tuner; a failure on the way removes what this attempt
    made (and deletes its parent run), never an older study."""
    made = None
    tracker = None
    lock = contextlib.ExitStack()
    try:
        try:
            made = make_study_dir(study_dir, overwrite)
        except OSError as exc:
            raise StudyError(f"cannot create the study folder {study_dir} ({exc})") from None
        lock.enter_context(driver_lock(study_dir, "run"))
        if on_study_dir is not None:
            on_study_dir(study_dir)
        (study_dir / SPEC_FILE).write_text(
            yaml.safe_dump(spec.model_dump(mode="json"), sort_keys=False)
        )
        uri = spec.tracking.uri or default_uri(study_dir)
        try:
            tracker = StudyTracker.start(
                uri, spec.name, study_dir / "mlartifacts", tags={VERSION_TAG: version}
            )
            tracker.log_artifact(study_dir / SPEC_FILE)
        except (TrackingUnreachable, TrackingRejected) as exc:
            raise _tracking_error(exc) from None
        info = StudyInfo(
            spec.name,
            study_dir,
            uri,
            tracker.experiment_id,
            tracker.parent_run_id,
            spec.num_tune_trials(),
            spec.num_trials(),
        )
        info.write()
        context = _context(spec, info, version, resources)
        tuner = _as_study_error(new_tuner, spec, study_dir, context, verbose, overwrite)
    except BaseException:
        if tracker is not None:
            tracker.discard()
        lock.close()
        remove_new(study_dir, made)
        raise
    return tracker, info, tuner, lock


def _mark_killed(tracker: StudyTracker) -> None:
    # The study's own error matters more than a parent run left RUNNING on a lost server.
    with contextlib.suppress(TrackingUnreachable):
        tracker.finish(RUN_KILLED)


def _context(
    spec: StudySpec, info: StudyInfo, version: str, resources: dict[str, float]
) -> StudyContext:
    """What every trial of the study shares: where it tracks, the code, its resources and the
    spec's execution switches."""
    execution = spec.execution
    return StudyContext(
        tracking_uri=info.tracking_uri,
        experiment_id=info.experiment_id,
        parent_run_id=info.parent_run_id,
        study=info.name,
        code_version=version,
        cpus=resources["cpu"],
        gpu=resources["gpu"],
        log_models=execution.log_models,
        register_models=execution.register_models,
        system_metrics=execution.system_metrics,
        log_artifacts=execution.log_artifacts,
        time_limit_s=execution.trial_time_limit_s,
    )


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
    _as_study_error(connect, address)
    resources = trial_resources(spec)
    try:
        tracker.reopen()
    except TrackingUnreachable as exc:
        raise _resume_unreachable(exc, info) from exc
    try:
        context = _context(spec, info, code_version(), resources)
        tuner = restored_tuner(spec, tune_dir, context, restart_errored=restart_errored)
    except BaseException:
        _mark_killed(tracker)
        raise
    return _fit(tracker, info, tuner, spec, started)


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
