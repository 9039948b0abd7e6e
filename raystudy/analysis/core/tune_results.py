"""A study's results table read from Ray Tune's storage (`<study>/tune/`), for when MLflow
cannot be (`analyze --from-tune`).

Every trial reports its train/* rows and its final scores to Tune as well as to MLflow; the
models recorded there (`raystudy.study.records`) make the same table `load_results` builds from
MLflow. Beside that one this table lacks the artifacts and the model-cost params, and its
train/* curve can miss the reports a killed worker made after its last checkpoint (Tune rolls
its result file back to the checkpoint).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from raystudy.analysis.core.columns import ERROR, METRIC, PARAM, RUN_NAME
from raystudy.analysis.core.errors import AnalysisError
from raystudy.data.splits.registry import split_tag
from raystudy.study.folder import StudyInfo, load_study_spec, tune_dir_of
from raystudy.study.records import StudyLayout, model_params, models_of
from raystudy.tags import FROM_TUNE, SOURCE_TAG, SPLIT_TAG, STUDY_TAG, TRIAL_ID_TAG, column
from raystudy.tune.state import FINISHED, TuneStateError, read_tune_trials


def load_tune_results(study_dir: Path) -> pd.DataFrame:
    """The results table (as `load_results` builds it from MLflow) from Tune's storage: one
    row per started trial with `status`, `params.*`, `metrics.*` and `tags.*` columns."""
    info = StudyInfo.read(study_dir)
    spec = load_study_spec(study_dir)
    layout = StudyLayout.of(spec)
    stacks = layout.stacks
    rows = []
    try:
        tune_trials = read_tune_trials(tune_dir_of(study_dir))
    except TuneStateError as exc:
        raise AnalysisError(str(exc).replace("STUDY", info.name)) from None
    for tune_trial in tune_trials:
        for trial, config, tags in models_of(tune_trial, spec, info.name, layout):
            row: dict[str, Any] = {
                "run_id": "",
                "status": trial.status,
                RUN_NAME: trial.name,
                column(TRIAL_ID_TAG): trial.trial_id,
                column(STUDY_TAG): info.name,
                column(SOURCE_TAG): FROM_TUNE,
                column(SPLIT_TAG): split_tag(config.split),
                **{column(k): v for k, v in tags.items()},
            }
            if trial.outcome != FINISHED and trial.error:
                row[ERROR] = trial.error
            # MLflow keeps params as strings; so does this table, for the same analysis.
            row.update(
                {PARAM + k: str(v) for k, v in model_params(tune_trial, config, stacks).items()}
            )
            row.update({METRIC + k: v for k, v in trial.metrics().items()})
            rows.append(row)
    return pd.DataFrame(rows)
