"""A study's trial counts by outcome, read from disk, and its MLflow runs by status: what
`raystudy status` shows (`status_report`)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from raystudy.keys import TIME
from raystudy.phases import phase_lines, runs_phases
from raystudy.study.folder import (
    STUDY_FILE,
    StoreUnavailable,
    StudyError,
    StudyInfo,
    check_store,
)
from raystudy.study.lock import driver_words, holder
from raystudy.study.report import PROBLEM, WARNING, Line, Report
from raystudy.tags import RUN_FINISHED, RUN_NAME_TAG, column
from raystudy.tracking.reader import trial_runs_table
from raystudy.tracking.retry import TrackingRejected, TrackingUnreachable, shown
from raystudy.tune.state import (
    OUTCOMES,
    PENDING,
    TUNE_DIR,
    TuneStateError,
    outcome_word,
    tune_outcomes,
)


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


def study_runs(study_dir: Path) -> pd.DataFrame:
    """The study's MLflow runs (trial and external; `trial_runs_table`). StudyError when its
    sqlite store is missing; TrackingUnreachable or TrackingRejected when the store cannot be
    read (a server down, a ${VAR} in its URI unset here)."""
    info = StudyInfo.read(study_dir)
    check_store(info)
    runs = trial_runs_table(info.tracking_uri, info.experiment_id)
    if runs.empty:
        return runs
    return runs.sort_values(column(RUN_NAME_TAG), kind="stable")  # as `analyze` reads them


def measured_runs(study_dir: Path) -> tuple[list[tuple[dict[str, str], dict[str, float]]], str]:
    """The study's finished trial runs as `plan` reads them (their params and `time/*`
    metrics, `raystudy.phases`), and where they were read. StudyError, TrackingUnreachable
    or TrackingRejected as `study_runs`."""
    runs = study_runs(study_dir)
    if runs.empty:
        return [], str(study_dir)
    finished = runs[runs["status"] == RUN_FINISHED]
    params = [c for c in finished.columns if c.startswith("params.")]
    timed = [c for c in finished.columns if c.startswith(f"metrics.{TIME}")]
    out = []
    for row in finished[params + timed].to_dict("records"):
        out.append(
            (
                {k.removeprefix("params."): str(v) for k, v in row.items() if k in params},
                {
                    k.removeprefix("metrics."): float(v)
                    for k, v in row.items()
                    if k in timed and pd.notna(v)
                },
            )
        )
    return out, f"{len(out)} finished run(s) in {study_dir}"


def run_statuses(runs: pd.DataFrame) -> dict[str, int]:
    """The runs by status, most first."""
    return {} if runs.empty else runs["status"].value_counts().to_dict()


def being_started(study_dir: Path) -> dict[str, object] | None:
    """The driver of a study being created: `raystudy run` takes the study's lock, starts its
    MLflow store (seconds), then writes study.json. None once study.json exists, or when no
    live driver holds the folder (then it is no study)."""
    if (study_dir / STUDY_FILE).exists():
        return None
    return holder(study_dir)


def starting_line(study_dir: Path, name: str | None, driver: dict[str, object]) -> str:
    return (
        f"Study {name or study_dir.name!r} in {study_dir} is being started by "
        f"{driver_words(driver)}: its {STUDY_FILE} is not written yet; ask again in a few seconds"
    )


def status_report(study_dir: Path, name: str | None = None) -> Report:
    """`raystudy status`: the study (`name`, default its folder's), its trial count and
    folder, a line per outcome that has trials (Tune's view), then its MLflow runs by status.
    StudyError for a folder that holds no readable study; a store that cannot be read is a
    line of the report, after Tune's counts (exit code 4, the store's, also for a missing
    sqlite store). A study whose `run` holds the lock but has not written study.json yet is
    being started: said, with its driver, exit code 0."""
    starter = being_started(study_dir)
    if starter is not None:
        return Report([Line(starting_line(study_dir, name, starter))], 0)
    info = StudyInfo.read(study_dir)
    text = [f"Study {name or study_dir.name!r} ({info.num_tune_trials} trials) in {study_dir}"]
    driver = holder(study_dir)
    if driver is not None:
        text.append(f"  being driven by pid {driver.get('pid')} on host {driver.get('host')}")
    damaged = None
    try:
        counts = study_status(study_dir)
    except TuneStateError as exc:  # the MLflow counts below are still worth having
        counts, damaged = {}, Line(str(exc).replace("STUDY", info.name), PROBLEM)
    text += [f"  {outcome_word(s):13s} {counts[s]}" for s in OUTCOMES if counts.get(s)]
    lines = [Line(t) for t in text] + ([damaged] if damaged else [])
    code = 2 if damaged else 0
    try:
        runs = study_runs(study_dir)
    # Tune's counts above are still worth having (a store refused: e.g. a ${VAR} unset here).
    except (TrackingUnreachable, TrackingRejected) as exc:
        unknown = Line(f"  MLflow runs unknown: {exc}", WARNING)
        return Report([*lines, unknown], code or StoreUnavailable.exit_code)
    except StudyError as exc:
        return Report([*lines, Line(str(exc), PROBLEM)], getattr(exc, "exit_code", 2))
    by_status = run_statuses(runs)
    if by_status:
        said = ", ".join(f"{v} {k.lower()}" for k, v in by_status.items())
        lines.append(Line(f"  MLflow runs: {said}"))
    lines += [Line(text) for text in phase_lines(runs)]
    return Report(lines, code)


def status_data(study_dir: Path, name: str | None = None) -> dict[str, Any]:
    """What `status_report` says, as data (`raystudy status --json`): the study, its folder
    and trial counts, the driver holding it (or None), Tune's trial counts by outcome
    (`outcomes`), MLflow's runs
    by status and the phases' summed seconds (None, with the reason in `mlflow_error`, when the
    store cannot be read; `outcomes_error` likewise for a damaged Tune state). `starting` is
    true, with only `driver` known (the rest None), while a `run` that holds the lock has not
    yet written study.json."""
    starter = being_started(study_dir)
    if starter is not None:
        # The same keys as a study's, with nothing known yet but its driver.
        unknown = (
            "tune_trials",
            "models",
            "tracking_uri",
            "outcomes",
            "outcomes_error",
            "mlflow_runs",
            "mlflow_error",
            "phases",
        )
        return {
            "study": name or study_dir.name,
            "folder": str(study_dir),
            "starting": True,
            "driver": starter,
            **dict.fromkeys(unknown),
        }
    info = StudyInfo.read(study_dir)
    out: dict[str, Any] = {
        "study": name or study_dir.name,
        "folder": str(study_dir),
        "starting": False,
        "tune_trials": info.num_tune_trials,
        "models": info.models,
        "tracking_uri": shown(info.tracking_uri),
        "driver": holder(study_dir),
        "outcomes": None,
        "outcomes_error": None,
        "mlflow_runs": None,
        "mlflow_error": None,
        "phases": None,
    }
    try:
        out["outcomes"] = {outcome_word(k): v for k, v in study_status(study_dir).items()}
    except TuneStateError as exc:
        out["outcomes_error"] = str(exc).replace("STUDY", info.name)
    try:
        runs = study_runs(study_dir)
    except (TrackingUnreachable, TrackingRejected, StudyError) as exc:
        out["mlflow_error"] = str(exc)
        return out
    out["mlflow_runs"] = {k.lower(): int(v) for k, v in run_statuses(runs).items()}
    phases = runs_phases(runs)
    if phases is not None:
        table, timed = phases
        out["phases"] = {"runs": timed, "seconds": table}
    return out
