"""A study's trial counts by outcome, read from disk (what `raystudy status` shows)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from raystudy.study.folder import StudyInfo
from raystudy.tune.state import PENDING, TUNE_DIR, tune_outcomes


def study_status(study_dir: Path) -> dict[str, int]:
    """Tune trial counts by `trial_outcome` (`raystudy.tune.state`): FINISHED, STOPPED (by the
    scheduler, before the trial's scores), UNFINISHED, ERROR, and Tune's RUNNING, PAUSED;
    trials Tune has not recorded yet are PENDING.

    A driver that was killed leaves its trials marked RUNNING: they are what `resume`
    continues.
    """
    info = StudyInfo.read(study_dir)
    counts = Counter(tune_outcomes(study_dir / TUNE_DIR).values())
    if info.num_tune_trials > sum(counts.values()):
        counts[PENDING] += info.num_tune_trials - sum(counts.values())
    return dict(counts)
