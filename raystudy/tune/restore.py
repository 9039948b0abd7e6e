"""Resuming a study's Tune run: whether Tune saved one to resume, and the Tuner rebuilt from it.

The study driver (`raystudy.study.resume.resume_study`) decides when to resume and what to say;
what Ray Tune is asked, and how, is here, so that Ray stays inside `raystudy.tune`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from raystudy.spec import StudySpec
from raystudy.trials.common import StudyContext
from raystudy.tune.adapter import with_progress
from raystudy.tune.trainable import make_trainable


def can_restore(tune_dir: Path) -> bool:
    """Whether `tune_dir` (a study's `tune/`) holds a Tune experiment state to resume."""
    from ray import tune

    return tune.Tuner.can_restore(str(tune_dir))


def restored_tuner(
    spec: StudySpec, tune_dir: Path, context: StudyContext, *, restart_errored: bool = False
) -> Any:
    """The Tuner of an interrupted study, from its saved state: unfinished trials continue from
    their last checkpoint, finished ones are not run again, errored ones resume from their
    checkpoint (or, with `restart_errored`, from scratch). Tune rebuilds the trials with the
    trainable given here (`Tuner.restore`), so it carries this run's context."""
    from ray import tune

    tuner = tune.Tuner.restore(
        str(tune_dir),
        trainable=make_trainable(spec, context),
        resume_unfinished=True,
        resume_errored=not restart_errored,
        restart_errored=restart_errored,
    )
    return with_progress(tuner, spec, tune_dir)
