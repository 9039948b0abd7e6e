"""A study run or resumed with its progress on the terminal (`raystudy run`, `optimize`,
`resume`): the driver's other output goes to a log in the study folder, or, `verbose`, Ray's
and Tune's own output is printed as they write it, with no display and no log."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

from mlflow.exceptions import MlflowException

from raystudy.spec import StudySpec
from raystudy.study.drift import resume_warnings
from raystudy.study.driver import run_study
from raystudy.study.folder import StudyInfo, load_study_spec
from raystudy.study.lock import refuse_if_driven
from raystudy.study.outcome import StudyOutcome
from raystudy.study.resume import restore_tune_state, resume_study
from raystudy.terminal import log_path, watched
from raystudy.tracking.retry import TrackingRejected, TrackingUnreachable
from raystudy.version import code_version


def run_watched(
    spec: StudySpec,
    *,
    output: Path = Path("studies"),
    address: str | None = None,
    overwrite: bool = False,
    verbose: bool = False,
) -> tuple[StudyOutcome, Path | None]:
    """`run_study` with its progress shown; the outcome, and the log (None when `verbose`)."""
    run = functools.partial(run_study, spec, output=output, address=address, overwrite=overwrite)
    if verbose:
        return run(), None
    metric, _ = spec.search.first_target()
    with watched(spec.name, spec.num_tune_trials(), command="run", metric=metric) as captured:
        outcome = run(on_study_dir=lambda folder: captured.move_to(log_path(folder, "run")))
    return outcome, captured.path


def resume_watched(
    study_dir: Path,
    *,
    name: str | None = None,
    address: str | None = None,
    restart_errored: bool = False,
    verbose: bool = False,
) -> tuple[StudyOutcome, Path | None]:
    """`resume_study` with its progress shown (as `name`, default the folder's); the outcome,
    and the log (None when `verbose`)."""
    resume = functools.partial(
        resume_study, study_dir, address=address, restart_errored=restart_errored
    )
    # Said before the display starts and a log is opened in the folder of a study in use;
    # and before study.json is read: a `run` holds the lock while it is still writing it.
    refuse_if_driven(study_dir, "resume")
    info = StudyInfo.read(study_dir)
    restore_tune_state(study_dir)
    warn_of_drift(info, study_dir)
    if verbose:
        return resume(), None
    metric, _ = load_study_spec(study_dir).search.first_target()
    with watched(
        name or study_dir.name,
        info.num_tune_trials,
        command="resume",
        metric=metric,
        study_dir=study_dir,
    ) as captured:
        outcome = resume()
    return outcome, captured.path


def warn_of_drift(info: StudyInfo, study_dir: Path) -> None:
    """Say on stderr what changed since the study ran (code version, data and split digests),
    before anything is trained; a store that cannot be read now is left to `resume` to say."""
    try:
        lines = resume_warnings(info, load_study_spec(study_dir), code_version())
    except (TrackingUnreachable, TrackingRejected, MlflowException, OSError):
        return
    for line in lines:
        print(f"Warning: {line}", file=sys.stderr, flush=True)
