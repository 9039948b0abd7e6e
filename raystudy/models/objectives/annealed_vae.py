"""AnnealedVAE (Burgess et al., 2018, "Understanding disentangling in beta-VAE", Eq. 8).

    loss = E_q[-log p(x|z)] + gamma * |KL(q(z|x) || N(0, I)) - C(t)|
    C(t) = min(c_max, c_max * t / iteration_threshold)

t counts the optimiser steps already taken, so C is 0 at the first batch, as in
disentanglement_lib's `AnnealedVAE` (which also applies the target to the batch-mean KL).
The capacity C lets information into the code gradually. Defaults: gamma = 1000 and
iteration_threshold = 100000, fixed in disentanglement_lib's study, which sweeps c_max in
{5, 10, 25, 50, 75, 100}; c_max = 25 is the dSprites value of Burgess et al. Reported extra:
`capacity` (C at the step).
"""

from __future__ import annotations

from typing import ClassVar

import torch
from pydantic import Field

from raystudy.models.objectives.base import Batch, LossTerms, Objective, ObjectiveParams
from raystudy.models.objectives.registry import OBJECTIVES
from raystudy.models.vae import VAE, elbo_terms


def capacity(step: int, c_max: float, iteration_threshold: int) -> float:
    """C(t) = min(c_max, c_max * t / iteration_threshold): linear from 0, then constant."""
    return min(c_max, c_max * step / iteration_threshold)


class AnnealedVAEParams(ObjectiveParams):
    gamma: float = Field(1000.0, gt=0.0, description="weight of |KL - C|")
    c_max: float = Field(25.0, ge=0.0, description="final capacity C in nats")
    iteration_threshold: int = Field(
        100_000, ge=1, description="steps over which C grows from 0 to c_max"
    )


@OBJECTIVES.register("annealed_vae")
class AnnealedVAE(Objective):
    Params = AnnealedVAEParams
    loss_weights: ClassVar[tuple[str, ...]] = ("gamma",)
    gamma: float
    c_max: float
    iteration_threshold: int

    def __call__(
        self, model: VAE, batch: Batch, *, step: int = 0, kl_weight: float = 1.0
    ) -> LossTerms:
        _, _, _, recon, kl = elbo_terms(model, batch.inputs, batch.targets)
        c = capacity(step, self.c_max, self.iteration_threshold)
        penalty = self.gamma * (kl - c).abs()
        extras = {"capacity": torch.tensor(c, device=kl.device, dtype=kl.dtype)}
        return LossTerms(recon + kl_weight * penalty, recon, kl, extras)
