"""Running a study under Ray Tune: its start from the driver's side.

`run_study` asks first what can refuse the study, in order of cost (the output folder, the
Optuna and tracking stores, Ray, the trial's resources), then makes the study folder, the MLflow
parent run and the Tuner (`raystudy.tune.adapter`), and runs it to its end
(`raystudy.study.outcome`). `raystudy.study.resume` continues an interrupted study.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from raystudy.spec import ALLOWED_TRACKING_URIS, StudySpec
from raystudy.study.folder import (
    SPEC_FILE,
    StoreUnavailable,
    StudyError,
    StudyInfo,
    check_study_dir,
    make_study_dir,
    remove_new,
)
from raystudy.study.lock import driver_lock, refuse_if_driven
from raystudy.study.outcome import StudyOutcome, fit_study
from raystudy.study.setup import (
    as_study_error,
    check_optuna_study,
    study_context,
    trial_resources,
)
from raystudy.tags import VERSION_TAG
from raystudy.tracking.retry import TrackingRejected, TrackingUnreachable, TrackingVariableUnset
from raystudy.tracking.study_run import StudyTracker, default_uri
from raystudy.tune.adapter import new_tuner
from raystudy.tune.cluster import connect
from raystudy.version import code_version


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
    as_study_error(connect, address)
    resources = trial_resources(spec)
    version = code_version()
    tracker, info, tuner, lock = _start(
        spec, study_dir, overwrite, version, resources, verbose, on_study_dir
    )
    with lock:
        return fit_study(tracker, info, tuner, spec, started)


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
        context = study_context(spec, info, version, resources)
        tuner = as_study_error(new_tuner, spec, study_dir, context, verbose, overwrite)
    except BaseException:
        if tracker is not None:
            tracker.discard()
        lock.close()
        remove_new(study_dir, made)
        raise
    return tracker, info, tuner, lock
