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

from raystudy.models.objectives.base import Batch, LossTerms, Objective
from raystudy.models.objectives.registry import OBJECTIVES
from raystudy.models.vae import VAE, bernoulli_nll, gaussian_kl


def capacity(step: int, c_max: float, iteration_threshold: int) -> float:
    """C(t) = min(c_max, c_max * t / iteration_threshold): linear from 0, then constant."""
    return min(c_max, c_max * step / iteration_threshold)


@OBJECTIVES.register("annealed_vae")
class AnnealedVAE(Objective):
    hyperparameters: ClassVar[tuple[str, ...]] = ("gamma", "c_max", "iteration_threshold")
    loss_weights: ClassVar[tuple[str, ...]] = ("gamma",)

    def __init__(
        self, gamma: float = 1000.0, c_max: float = 25.0, iteration_threshold: int = 100_000
    ) -> None:
        if iteration_threshold < 1:
            raise ValueError(f"iteration_threshold must be >= 1, got {iteration_threshold}")
        self.gamma = float(gamma)
        self.c_max = float(c_max)
        self.iteration_threshold = int(iteration_threshold)

    def __call__(
        self, model: VAE, batch: Batch, *, step: int = 0, kl_weight: float = 1.0
    ) -> LossTerms:
        logits, mu, logvar = model(batch.inputs)
        recon = bernoulli_nll(logits, batch.targets).mean()
        kl = gaussian_kl(mu, logvar).sum(dim=1).mean()
        c = capacity(step, self.c_max, self.iteration_threshold)
        penalty = self.gamma * (kl - c).abs()
        extras = {"capacity": torch.tensor(c, device=kl.device, dtype=kl.dtype)}
        return LossTerms(recon + kl_weight * penalty, recon, kl, extras)
