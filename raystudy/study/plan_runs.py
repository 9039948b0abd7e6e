"""The runs `raystudy plan` costs a study's trials with: where the study has run before under
the studies folder, its finished runs' measured phase timings (`status.measured_runs`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from raystudy.study.folder import STUDY_FILE, StudyError
from raystudy.study.status import measured_runs
from raystudy.tracking.retry import TrackingRejected, TrackingUnreachable

#: A study's measured runs by its name, and where they were read ("" where none were).
MeasuredRuns = Callable[[str], tuple[list[Any], str]]


def measured_under(output: Path, warn: Callable[[str], None]) -> MeasuredRuns:
    """The reader `plan_study` asks for a study's measured runs by name: none for a study that
    has not run under `output`, nor for one whose runs cannot be read (said with `warn`: the
    plan is then calibrated alone)."""

    def measured(name: str) -> tuple[list[Any], str]:
        folder = output / name
        if not (folder / STUDY_FILE).is_file():
            return [], ""
        try:
            return measured_runs(folder)
        except (StudyError, TrackingUnreachable, TrackingRejected) as exc:
            warn(
                f"raystudy: the runs of {folder} cannot be read ({exc}); the plan is "
                "calibrated alone"
            )
            return [], ""

    return measured
