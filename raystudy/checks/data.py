"""Whether each trial's data and model can be built before Ray starts: every distinct
dataset and split (files opened, split sets checked), and each model on its data (the
architecture at the dataset's resolution, its size, pairs drawable from the split, and a
held-out set for the composition task's test triples)."""

from __future__ import annotations

import functools
from typing import Any

import torch

from raystudy.data.check import DataChecker, DataProblem
from raystudy.data.splits.composition import composition_problem
from raystudy.data.splits.pairs import pairs_problem
from raystudy.models import build_model, num_parameters
from raystudy.models.objectives import objective_from_config
from raystudy.spec import ModelConfig, StudySpec, TrialConfig
from raystudy.spec.problems import point_label


def data_problems(
    spec: StudySpec,
    trials: list[TrialConfig],
    points: list[dict[str, Any]],
    label: str,
    checker: DataChecker,
) -> list[tuple[str, str]]:
    """Build every distinct dataset and split the trials use, once each.

    A missing or malformed dataset file, a split the dataset cannot hold, or a split written
    in the YAML whose sets are malformed, empty or overlap would otherwise fail in every
    trial, after Ray has started. A problem of the spec's own dataset/split is reported at
    its field; one that only a grid point brings, at that point.
    """
    problems: list[tuple[str, str]] = []
    reported = set()
    models: dict[str, tuple[str, str] | None] = {}
    for i, (trial, point) in enumerate(zip(trials, points, strict=True)):
        built = checker.split(trial.dataset.name, trial.dataset.options, trial.split)
        problem = built if isinstance(built, DataProblem) else None
        own = trial.dataset == spec.dataset and trial.split == spec.split
        if problem is None:
            # The data is fine: can this model be built on it (conv is for 32 or 64 px), and
            # can its pairs be drawn from the split?
            ds = checker.dataset(trial.dataset.name, trial.dataset.options)
            key = repr((trial.model, trial.dataset, trial.split))
            if key not in models:
                models[key] = _model_problem(trial.model, ds, built)
            found = models[key]
            if found is None or found in reported:
                continue
            reported.add(found)
            own = own and trial.model == spec.model
            field, message = found
            where = field if own else f"{point_label(label, i, point)} -> {field}"
            problems.append((where, message))
            continue
        if problem in reported:  # once, not once per grid point
            continue
        reported.add(problem)
        where = problem.field if own else f"{point_label(label, i, point)} -> {problem.field}"
        problems.append((where, problem.message))
    return problems


MAX_MODEL_PARAMETERS = 2**31


def _model_problem(model: ModelConfig, ds: Any, split: Any) -> tuple[str, str] | None:
    """(field, message) if the model cannot be built on `ds` or trained on `split`, else
    None."""
    try:
        objective = objective_from_config(model)
        latent = ds.factors.num_factors if objective.code_is_factor_sized else model.latent_dim
        size = _network_size(model.architecture, ds.channels, latent, ds.resolution)
    except Exception as exc:
        return (
            "model.architecture",
            f"{exc} (dataset {ds.name} at resolution {ds.resolution}; "
            "architectures: conv 32 or 64 px, resnet 64 or 128 px, mlp any)",
        )
    if size > MAX_MODEL_PARAMETERS:
        return (
            "model.architecture",
            f"{model.architecture} at resolution {ds.resolution} has {size:,} parameters, more "
            f"than {MAX_MODEL_PARAMETERS:,}: lower dataset.options.resolution",
        )
    pairs = pairs_problem(objective.pair_k, ds, split) if objective.pair_k is not None else None
    if pairs is not None and objective.pair_k == "laplace":
        return "model.data_distribution", f"{pairs}; allowed: uniform (k changed factors)"
    if pairs is not None:
        return "model.k", f"{pairs}; allowed: 1 up to that number, or random with 2 or more"
    composition = composition_problem(split) if objective.triples else None
    if composition is not None:
        return "split", f"objective {model.objective!r}: {composition}"
    return None


@functools.cache
def _network_size(architecture: str, channels: int, latent_dim: int, resolution: int) -> int:
    """Parameters of the encoder and decoder, built on the meta device (shapes only, no
    memory); once per shape, since a sweep over loss weights builds the same network."""
    with torch.device("meta"):
        return num_parameters(build_model(architecture, channels, latent_dim, resolution))
