"""Training objectives of the VAE family; one file each, registered by name."""

from raystudy.models.objectives import ada_gvae, beta_vae  # noqa: F401  (they register)
from raystudy.models.objectives.base import Batch, LossTerms, Objective
from raystudy.models.objectives.registry import OBJECTIVES


def get_objective(name: str, **params: float) -> Objective:
    return OBJECTIVES.get(name)(**params)


__all__ = ["OBJECTIVES", "Batch", "LossTerms", "Objective", "get_objective"]
