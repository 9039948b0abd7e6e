"""A study's trial runs, read back from MLflow into one table (a row per trial)."""

from __future__ import annotations

from pathlib import Path

import mlflow
import pandas as pd

from raystudy.study import StudyInfo
from raystudy.tracking import ROLE_TAG

RESULTS_FILE = "results.parquet"


def load_results(study_dir: Path) -> pd.DataFrame:
    """One row per trial run: `status`, `run_id`, `params.*`, `metrics.*`, `tags.*` columns.

    Reads the latest value of each metric, so `dis/*` and `transfer/*` are the final scores.
    """
    info = StudyInfo.read(study_dir)
    mlflow.set_tracking_uri(info.tracking_uri)
    frame = mlflow.search_runs(
        experiment_ids=[info.experiment_id],
        filter_string=f"tags.`{ROLE_TAG}` = 'trial'",
        output_format="pandas",
    )
    if frame.empty:
        return frame
    frame = frame.sort_values("tags.mlflow.runName", kind="stable").reset_index(drop=True)
    return frame


def write_results(frame: pd.DataFrame, study_dir: Path) -> Path:
    out = study_dir / "analysis"
    out.mkdir(exist_ok=True)
    path = out / RESULTS_FILE
    frame.to_parquet(path, index=False)
    return path
