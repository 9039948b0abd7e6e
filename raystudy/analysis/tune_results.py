"""A study's results read from Ray Tune's storage (`<study>/tune/`), for when MLflow cannot be.

Every trial reports its train/* rows and its final scores to Tune as well as to MLflow, and
Tune keeps them per trial folder: `result.json` (one JSON object per report), `params.json`
(the trial's Tune config: a grid point index, or an Optuna draw) and `error.txt` (its last
error). They are read here as plain JSON, without Ray. Beside the MLflow table this one lacks
the artifacts and the model-cost params, and its train/* curve can miss the reports a killed
worker made after its last checkpoint (Tune rolls its result file back to the checkpoint).
"""

from __future__ import annotations

import json
from collections.abc import Container
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from raystudy.analysis.columns import ERROR, METRIC, PARAM, RUN_NAME
from raystudy.spec import StudySpec, TrialConfig, deep_merge
from raystudy.study import (
    TUNE_DIR,
    StudyError,
    StudyInfo,
    load_study_spec,
    trial_config,
    trial_labels,
    tune_states,
)
from raystudy.tags import SOURCE_TAG, SPLIT_TAG, STACK_TAG, STUDY_TAG, TRIAL_ID_TAG, column
from raystudy.tracking.reader import RunRecord
from raystudy.trial import EVALUATED, split_tag
from raystudy.trial_stack import DIVERGED_KEY, STACK_KEYS, member_keys

TRAIN = "train/"
#: A Tune config key of a trial that trains several models together (`seeds_per_trial`).
STACK = "stack"
#: The final scores of a trial (DESIGN.md Sec. 6), reported once, at its end.
FINAL_PREFIXES = ("eval/", "dis/", "down/", "transfer/")


@dataclass(frozen=True)
class TuneTrial:
    """One trial folder of Tune's experiment storage."""

    name: str
    trial_id: str
    config: dict[str, Any]
    rows: list[dict[str, Any]]
    error: str | None
    #: Tune's state of the trial (TERMINATED, ERROR, RUNNING, ...), when recorded.
    tune_state: str | None = None

    @property
    def evaluated(self) -> bool:
        """Whether the trial reported its final scores (what makes it finished for raystudy)."""
        return bool(self.rows) and bool(self.rows[-1].get(EVALUATED))

    @property
    def status(self) -> str:
        """The MLflow status this trial's run would have: FINISHED, FAILED, KILLED (Tune
        stopped it before its scores, e.g. ASHA; the study's end marks its run so) or
        RUNNING."""
        if self.evaluated:
            return "FINISHED"
        if self.error:
            return "FAILED"
        return "KILLED" if self.tune_state == "TERMINATED" else "RUNNING"

    def history(self) -> list[tuple[int, dict[str, float]]]:
        """(step, train/* means) of every train report, in order."""
        return [
            (int(row["step"]), {k: v for k, v in row.items() if k.startswith(TRAIN)})
            for row in self.rows
            if "step" in row and any(k.startswith(TRAIN) for k in row)
        ]

    def final(self) -> dict[str, float]:
        """The final scores, from the last report; empty for a trial that did not finish."""
        if not self.evaluated:
            return {}
        return {k: v for k, v in self.rows[-1].items() if k.startswith(FINAL_PREFIXES)}

    def metrics(self) -> dict[str, float]:
        """Latest value of every metric, as MLflow's `metrics.*` columns hold them."""
        latest: dict[str, float] = {}
        for _, row in self.history():
            latest.update(row)
        return {**latest, **self.final()}

    def member(self, s: int, name: str, trial_id: str) -> TuneTrial:
        """Model s of a stacked trial, as if it had been a trial of its own: its values from
        ``stack/<s>/`` of every report. It finished if the last report has its final scores;
        it failed if the trial did, or if it diverged (the others train on without it)."""
        prefix = f"{STACK_KEYS}{s}/"
        rows: list[dict[str, Any]] = []
        diverged: float | None = None
        for row in self.rows:
            own = {k[len(prefix) :]: v for k, v in row.items() if k.startswith(prefix)}
            diverged = own.pop(DIVERGED_KEY, diverged)
            out = {"step": row.get("step"), **own}
            if row.get(EVALUATED) and any(k.startswith(FINAL_PREFIXES) for k in own):
                out[EVALUATED] = 1.0
            rows.append(out)
        error = self.error
        if error is None and diverged is not None:
            error = f"TrainingDiverged: loss not finite at step {int(diverged)}"
        if error is None and self.evaluated and not (rows and rows[-1].get(EVALUATED)):
            error = "not evaluated: its stacked trial finished without its scores"
        return TuneTrial(name, trial_id, self.config, rows, error, self.tune_state)


def _error_line(path: Path) -> str | None:
    """The last line of Tune's `error.txt`: the exception and its message (a trial that was
    retried and then finished keeps the file of its earlier failure)."""
    if not path.is_file():
        return None
    lines = [line.strip() for line in path.read_text(errors="replace").splitlines()]
    lines = [line for line in lines if line]
    return lines[-1][:5000] if lines else "error (empty error.txt)"


def read_tune_trials(tune_dir: Path, skip: Container[str] = ()) -> list[TuneTrial]:
    """Every trial folder under `tune_dir` that has a `params.json` and is not named in
    `skip`, sorted by name."""
    states = tune_states(tune_dir)
    trials = []
    for params in sorted(tune_dir.glob("*/params.json")):
        folder = params.parent
        if folder.name in skip:
            continue
        rows = []
        result = folder / "result.json"
        if result.is_file():
            for line in result.read_text().splitlines():
                if line.strip():
                    # A driver killed mid-write can leave a truncated last line.
                    try:
                        rows.append(json.loads(line))
                    except json.JSONDecodeError:
                        continue
        trial_id = next((str(r["trial_id"]) for r in rows if "trial_id" in r), "")
        config = json.loads(params.read_text())
        error = _error_line(folder / "error.txt")
        trials.append(TuneTrial(folder.name, trial_id, config, rows, error, states.get(trial_id)))
    return trials


def tune_dir_of(study_dir: Path) -> Path:
    tune_dir = study_dir / TUNE_DIR
    if not tune_dir.is_dir():
        raise StudyError(
            f"{tune_dir} does not exist: the study {study_dir.name!r} has no Tune storage to "
            "read (it stopped before its first trial started)"
        )
    return tune_dir


def models_of(
    trial: TuneTrial, spec: StudySpec, study: str
) -> list[tuple[TuneTrial, TrialConfig, dict[str, str]]]:
    """The models a Tune trial trained, each as (its trial, its config, tags beyond the
    study's): the trial itself, or one per model of a stacked trial (`TuneTrial.member`),
    named and keyed as their MLflow runs are (`raystudy.trial_stack`)."""
    points = spec.points()
    if STACK not in trial.config:
        return [(trial, trial_config(spec.base(), points, trial.config), {})]
    members = spec.stacks()[trial.config[STACK]]
    configs = [TrialConfig.model_validate(deep_merge(spec.base(), points[j])) for j in members]
    if trial.rows and not any(k.startswith(STACK_KEYS) for row in trial.rows for k in row):
        raise StudyError(
            f"study {study!r}: stacked trial {trial.name} reported only the mean of its "
            "models to Tune (a raystudy before per-model reports): read it from MLflow"
        )
    labels = trial_labels(points)
    return [
        (
            trial.member(s, labels[j], f"{trial.trial_id}/{key}"),
            config,
            {STACK_TAG: trial.trial_id},
        )
        for s, (j, config, key) in enumerate(
            zip(members, configs, member_keys(configs), strict=True)
        )
    ]


def model_params(trial: TuneTrial, config: TrialConfig, stacks: list[list[int]]) -> dict[str, Any]:
    """A model's MLflow params as its trial logged them (but the model-cost ones): its
    config, and in a stacked trial that stack's size (`stacks`: the spec's `stacks()`)."""
    params: dict[str, Any] = config.flat()
    if STACK in trial.config:
        params["seeds_per_trial"] = len(stacks[trial.config[STACK]])
    return params


def run_records(study_dir: Path, skip: Container[str] = ()) -> list[RunRecord]:
    """What Tune recorded of every finished model (but those whose trial folder or run name
    is in `skip`), as the MLflow runs `sync_run` completes; the models of a stacked trial
    each get their own record."""
    spec = load_study_spec(study_dir)
    stacks = spec.stacks()
    records = []
    for trial in read_tune_trials(tune_dir_of(study_dir), skip):
        if not trial.trial_id:
            continue
        try:
            models = models_of(trial, spec, spec.name)
        except StudyError:
            continue  # a stack that reported only its mean: MLflow is its only record
        for model, config, tags in models:
            if not model.evaluated or model.name in skip:
                continue
            params = model_params(trial, config, stacks)
            records.append(
                RunRecord(
                    trial_id=model.trial_id,
                    name=model.name,
                    params=params,
                    tags={
                        STUDY_TAG: spec.name,
                        SPLIT_TAG: split_tag(config),
                        **tags,
                    },
                    history=model.history(),
                    final=model.final(),
                    final_step=config.train.steps,
                )
            )
    return records


def load_tune_results(study_dir: Path) -> pd.DataFrame:
    """The results table (as `load_results` builds it from MLflow) from Tune's storage: one
    row per started trial with `status`, `params.*`, `metrics.*` and `tags.*` columns."""
    info = StudyInfo.read(study_dir)
    spec = load_study_spec(study_dir)
    stacks = spec.stacks()
    rows = []
    for tune_trial in read_tune_trials(tune_dir_of(study_dir)):
        for trial, config, tags in models_of(tune_trial, spec, info.name):
            row: dict[str, Any] = {
                "run_id": "",
                "status": trial.status,
                RUN_NAME: trial.name,
                column(TRIAL_ID_TAG): trial.trial_id,
                column(STUDY_TAG): info.name,
                column(SOURCE_TAG): "tune",
                column(SPLIT_TAG): split_tag(config),
                **{column(k): v for k, v in tags.items()},
            }
            if trial.status != "FINISHED" and trial.error:
                row[ERROR] = trial.error
            # MLflow keeps params as strings; so does this table, for the same analysis.
            row.update(
                {PARAM + k: str(v) for k, v in model_params(tune_trial, config, stacks).items()}
            )
            row.update({METRIC + k: v for k, v in trial.metrics().items()})
            rows.append(row)
    return pd.DataFrame(rows)
