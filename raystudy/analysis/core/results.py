"""A study's trial runs, read back from MLflow into one table (a row per trial)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from raystudy.analysis.core.columns import ERROR, INVALID, METRIC, RUN_NAME, transfer_scores
from raystudy.analysis.core.groups import with_supervision
from raystudy.study.folder import STUDY_FILE, StudyInfo, check_store, study_path
from raystudy.tags import PROBE_PREFIX, RUN_FINISHED
from raystudy.tags import column as tag_column
from raystudy.tracking.reader import trial_runs_table

RESULTS_FILE = "results.parquet"
ANALYSIS_DIR = "analysis"


def load_results(study_dir: Path) -> pd.DataFrame:
    """One row per trial run: `status`, `run_id`, `params.*`, `metrics.*`, `tags.*` columns.

    Reads the latest value of each metric, so `dis/*` and `transfer/*` are the final scores.
    """
    info = StudyInfo.read(study_dir)
    check_store(info)
    frame = trial_runs_table(info.tracking_uri, info.experiment_id)
    if frame.empty:
        return frame
    frame = frame.sort_values(RUN_NAME, kind="stable").reset_index(drop=True)
    return frame


def study_dir_of(study: str | Path, output: Path = Path("studies")) -> Path:
    """A study folder from its path, or from its name under `output`."""
    path = Path(study)
    if (path / STUDY_FILE).is_file():
        return path.resolve()
    return study_path(output, str(study))


def load(study: str | Path, output: Path = Path("studies")) -> pd.DataFrame:
    """The results table of a study, for notebooks: what `analyze` writes to
    `results.parquet` (one row per trial run, any status, with a `supervision` column).

    `study` is a study folder or a study name under `output`.
    """
    frame = load_results(study_dir_of(study, output))
    return frame if frame.empty else with_supervision(frame)


def finished(frame: pd.DataFrame) -> pd.DataFrame:
    """The trials whose run completed: the only ones analysed (a failed or running trial's
    metrics are partial, and would bias every correlation towards what finishes early)."""
    if "status" not in frame.columns:
        return frame
    return frame[frame["status"] == RUN_FINISHED]


def status_counts(frame: pd.DataFrame) -> pd.Series:
    """Runs per MLflow status (FINISHED, RUNNING, FAILED, KILLED, ...), FINISHED first."""
    counts = frame["status"].value_counts()
    order = [RUN_FINISHED, *sorted(s for s in counts.index if s != RUN_FINISHED)]
    return counts.reindex([s for s in order if s in counts.index]).rename("runs")


def unfinished(frame: pd.DataFrame) -> pd.DataFrame:
    """Trial, status and error (when one was recorded) of every run that did not finish."""
    rest = frame[frame["status"] != RUN_FINISHED]
    errors = rest[ERROR] if ERROR in rest.columns else pd.Series("", index=rest.index)
    names = rest[RUN_NAME] if RUN_NAME in rest.columns else rest["run_id"]
    return pd.DataFrame(
        {"trial": names, "status": rest["status"], "error": errors.fillna("")}
    ).reset_index(drop=True)


def unscored(frame: pd.DataFrame) -> pd.DataFrame:
    """Trial and note of every finished run that left scores out because its model's codes
    were NaN or inf (`raystudy.invalid_scores`): their keys are missing, so every number
    leaves the trial out of those scores; this says which and why."""
    done = finished(frame)
    if INVALID not in done.columns:
        return pd.DataFrame(columns=["trial", "invalid"])
    marked = done[done[INVALID].notna() & (done[INVALID] != "")]
    names = marked[RUN_NAME] if RUN_NAME in marked.columns else marked["run_id"]
    return pd.DataFrame({"trial": names, "invalid": marked[INVALID]}).reset_index(drop=True)


def nonfinite(frame: pd.DataFrame) -> pd.DataFrame:
    """Score, runs and trials of every metric that finished trials logged as +-inf.

    Every correlation, selection and figure leaves such values out as it does missing ones
    (a rank of "infinitely bad" would let one blown-up score decide a correlation); this says
    which were left out, so that a smaller n is never a silent one.
    """
    done = finished(frame)
    names = done[RUN_NAME] if RUN_NAME in done.columns else done.get("run_id")
    rows = []
    for column in sorted(c for c in done.columns if c.startswith(METRIC)):
        values = pd.to_numeric(done[column], errors="coerce")
        bad = values.isin([np.inf, -np.inf])
        if bad.any():
            trials = [] if names is None else [str(n) for n in names[bad]]
            rows.append((column.removeprefix(METRIC), int(bad.sum()), ", ".join(trials)))
    return pd.DataFrame(rows, columns=["score", "runs", "trials"])


#: How a probe's scores were computed in runs from before the tags said so: scikit-learn's
#: MLP and xgboost on the CPU, the only implementations there were.
NOT_RECORDED = "not recorded (scored on the CPU, before the tag)"


def probe_implementations(frame: pd.DataFrame) -> pd.DataFrame:
    """Per probe, what computed its scores and in how many finished runs (the runs' tags
    `raystudy.probe.<name>`): a study whose runs were scored on different devices, or by
    another implementation than the reference, says so."""
    done = finished(frame)
    by_probe: dict[str, list[str]] = {}
    for score in transfer_scores(done):
        by_probe.setdefault(score.probe, []).append(score.column)
    rows = []
    for probe, columns in sorted(by_probe.items()):
        tag = tag_column(PROBE_PREFIX + probe)
        has = done[columns].notna().any(axis=1)
        values = (done[tag] if tag in done.columns else pd.Series(None, index=done.index))[has]
        counts = values.fillna(NOT_RECORDED).replace("", NOT_RECORDED).value_counts()
        rows += [(probe, str(how), int(n)) for how, n in counts.items()]
    return pd.DataFrame(rows, columns=["probe", "computed by", "runs"])
