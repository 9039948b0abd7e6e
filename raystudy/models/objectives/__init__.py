"""Training objectives of the VAE family; one file each, registered by name."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# The objective modules register themselves on import.
from raystudy.models.objectives import (  # noqa: F401
    ada_gvae,
    annealed_vae,
    beta_tcvae,
    beta_vae,
    cascade_vae,
    composition,
    dip_vae,
    factor_vae,
    gt_decoder,
    lie_group_vae,
    ml_vae,
    supervised,
    wae,
)
from raystudy.models.objectives.base import Batch, LossTerms, Objective, PairK
from raystudy.models.objectives.registry import OBJECTIVES

if TYPE_CHECKING:
    from raystudy.spec import ModelConfig


def get_objective(name: str, **params: Any) -> Objective:
    """The objective `name` with the given hyperparameters (only those it reads)."""
    cls = OBJECTIVES.get(name)
    unknown = sorted(set(params) - set(cls.hyperparameters))
    if unknown:
        reads = ", ".join(cls.hyperparameters) or "none"
        raise ValueError(f"objective {name!r} has no hyperparameter {unknown}; it reads: {reads}")
    return cls(**params)


def objective_from_config(config: ModelConfig) -> Objective:
    """The objective of a `ModelConfig`, reading only its own fields; a field left unset
    (None) keeps the objective's default."""
    cls = OBJECTIVES.get(config.objective)
    params = {h: getattr(config, h) for h in cls.hyperparameters}
    return cls(**{h: v for h, v in params.items() if v is not None})


__all__ = [
    "OBJECTIVES",
    "Batch",
    "LossTerms",
    "Objective",
    "PairK",
    "get_objective",
    "objective_from_config",
]
