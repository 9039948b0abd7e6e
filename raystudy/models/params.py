"""A trial's MLflow params: its config as dotted keys, with only the model hyperparameters its
objective reads.

Kept beside the objectives because which hyperparameters a model has is theirs to say
(`Objective.hyperparameters`); the config schema below knows none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from raystudy.models.objectives import objective_from_config
from raystudy.spec.grid import flatten

if TYPE_CHECKING:
    from raystudy.spec import ModelConfig, TrialConfig

#: The ModelConfig fields every objective uses; the rest are some objectives' hyperparameters.
_MODEL_COMMON = ("objective", "architecture", "latent_dim")


def model_params(model: ModelConfig) -> dict[str, Any]:
    """The fields every objective uses, and the hyperparameters this one reads, at the values
    it uses (an unset `gamma` is the objective's default)."""
    objective = objective_from_config(model)
    own = {h: getattr(objective, h) for h in type(objective).hyperparameters}
    return {**{f: getattr(model, f) for f in _MODEL_COMMON}, **own}


def trial_params(config: TrialConfig) -> dict[str, Any]:
    """Dotted keys -> values: the MLflow params of a trial.

    Of the model's hyperparameters only those its objective reads are kept: a factor_vae run
    has no `model.beta`, so a filter or an `analyze --by beta` group never catches it.
    """
    data = config.model_dump(mode="json")
    data["model"] = model_params(config.model)
    return flatten(data)
