"""A study's models as Tune's storage recorded them, in the shape of their MLflow runs.

A Tune trial trains one model, or several together (`seeds_per_trial`); each model has its own
MLflow run. `models_of` splits a trial read from Tune's storage (`raystudy.tune.state`) into
its models, named, configured and tagged as their runs are, and `run_records` turns the
finished ones into the `RunRecord`s that `sync_run` completes MLflow from (a store that was
unreachable while they ran) and that `analyze --from-tune` reads instead of MLflow.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raystudy.data.splits.registry import split_tag
from raystudy.keys import STACK_KEYS
from raystudy.models.params import trial_params
from raystudy.spec import StudySpec, TrialConfig, deep_merge
from raystudy.study.folder import StudyError, load_study_spec, tune_dir_of
from raystudy.tags import SPLIT_TAG, STACK_TAG, STUDY_TAG
from raystudy.tracking.reader import RunRecord
from raystudy.trials.stacked import member_keys
from raystudy.tune.points import STACK, trial_config, trial_labels
from raystudy.tune.state import TuneTrial, read_tune_trials


@dataclass(frozen=True)
class StudyLayout:
    """What `models_of` reads of a spec: its base values, points, stacks and trial labels.

    Each costs time linear in the study's size (the grid expanded, grouped and labelled), so
    a reader of every trial makes it once (`of`), not once a trial: per trial it made reading
    a 12,600-model stacked study quadratic (seconds at 3,000 models, minutes at 12,600).
    """

    base: dict[str, Any]
    points: list[dict[str, Any]]
    stacks: list[list[int]]
    labels: list[str]

    @classmethod
    def of(cls, spec: StudySpec) -> StudyLayout:
        points = spec.points()
        return cls(spec.base(), points, spec.stacks(), trial_labels(points))


def models_of(
    trial: TuneTrial, spec: StudySpec, study: str, layout: StudyLayout | None = None
) -> list[tuple[TuneTrial, TrialConfig, dict[str, str]]]:
    """The models a Tune trial trained, each as (its trial, its config, tags beyond the
    study's): the trial itself, or one per model of a stacked trial (`TuneTrial.member`),
    named and keyed as their MLflow runs are (`raystudy.trials.stacked`). `layout` is the
    spec's (`StudyLayout.of(spec)`, made here if not given)."""
    layout = layout or StudyLayout.of(spec)
    if STACK not in trial.config:
        return [(trial, trial_config(layout.base, layout.points, trial.config), {})]
    members = layout.stacks[trial.config[STACK]]
    configs = [
        TrialConfig.model_validate(deep_merge(layout.base, layout.points[j])) for j in members
    ]
    if trial.rows and not any(k.startswith(STACK_KEYS) for row in trial.rows for k in row):
        raise StudyError(
            f"study {study!r}: stacked trial {trial.name} reported only the mean of its "
            "models to Tune (a raystudy before per-model reports): read it from MLflow"
        )
    return [
        (
            trial.member(s, layout.labels[j], f"{trial.trial_id}/{key}"),
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
    params: dict[str, Any] = trial_params(config)
    if STACK in trial.config:
        params["seeds_per_trial"] = len(stacks[trial.config[STACK]])
    return params


def run_records(study_dir: Path, skip: Container[str] = ()) -> list[RunRecord]:
    """What Tune recorded of every finished model (but those whose trial folder or run name
    is in `skip`), as the MLflow runs `sync_run` completes; the models of a stacked trial
    each get their own record."""
    spec = load_study_spec(study_dir)
    layout = StudyLayout.of(spec)
    stacks = layout.stacks
    records = []
    for trial in read_tune_trials(tune_dir_of(study_dir), skip):
        if not trial.trial_id:
            continue
        try:
            models = models_of(trial, spec, spec.name, layout)
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
                        SPLIT_TAG: split_tag(config.split),
                        **tags,
                    },
                    history=model.history(),
                    final=model.final(),
                    final_step=config.train.steps,
                )
            )
    return records
