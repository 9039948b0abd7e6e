"""Objective options written for an objective that does not read them, refused before Ray
starts.

Each objective declares its options in its own model (`Objective.Params`); the schema checks
every option against the objective of its trial and refuses one no objective has
(`raystudy.spec.option_problem`). What it cannot see is who an option was written for. The
spec's base `model` section holds shared defaults: a `beta` there is read by the grid's
beta-VAEs and ignored by its FactorVAEs. But an option written beside its objective (in a grid
point or search draw, or in the base section of a trial whose point keeps the base objective)
that this objective does not read would change nothing, silently: `{objective: factor_vae,
beta: [1, 4]}` trains the same model twice. Those are refused, naming the objective and what it
reads.

A saved spec.yaml from before objectives declared their own options lists every option of
every objective at its default; for such a base section (one holding all of `SAVED_OPTIONS`)
only what a grid point writes is checked, so studies saved then still resume and analyze.
"""

from __future__ import annotations

from typing import Any

from raystudy.models.objectives import OBJECTIVES
from raystudy.spec import StudySpec, TrialConfig
from raystudy.spec.grid import flatten
from raystudy.spec.problems import point_label

#: The options a saved spec.yaml's `model` section held when the model block declared every
#: objective's options itself (raystudy 0.x before per-objective options).
SAVED_OPTIONS = frozenset(
    {
        "beta", "gamma", "c_max", "iteration_threshold", "lambda_od", "lambda_mmd",
        "lambda_logvar", "beta_low", "beta_high", "release_every", "categories",
        "discrete_from", "category_balance", "lambda_hessian", "lambda_commute",
        "lambda_group_recon", "encoder_features_prob", "group_matrix_dim", "kl_mode", "k",
    }
)  # fmt: skip


def _reads(objective: str) -> str:
    return ", ".join(OBJECTIVES.get(objective).hyperparameters) or "no option"


def foreign_option_problems(
    spec: StudySpec, trials: list[TrialConfig], points: list[dict[str, Any]], label: str
) -> list[tuple[str, str]]:
    """(field, message) for each option written for an objective that does not read it
    (module doc); each problem once."""
    base = set(spec.model.options)
    saved = set(spec.model.model_extra or {}) >= SAVED_OPTIONS
    problems: dict[tuple[str, str], tuple[str, str]] = {}
    for i, (trial, point) in enumerate(zip(trials, points, strict=True)):
        name = trial.model.objective
        reads = set(OBJECTIVES.get(name).hyperparameters)
        keys = flatten(point)
        written = {o for o in trial.model.options if f"model.{o}" in keys}
        keeps_base = "model.objective" not in keys
        if keeps_base and not saved:
            written |= base
        for option in sorted(written - reads):
            field = f"model.{option}"
            if (name, option) in problems:
                continue
            where = f"{point_label(label, i, point)} -> {field}" if field in keys else field
            problems[(name, option)] = (
                where,
                f"objective {name!r} does not read {option} (it reads: {_reads(name)}); "
                "remove it (or set it to null), or write it beside an objective that reads it",
            )
    return list(problems.values())
