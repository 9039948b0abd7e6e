"""CascadeVAE's information cascade (Jeong & Song, ICML 2019, "Learning Discrete and
Continuous Factors of Data via Alternating Disentanglement"), continuous code only: Montero et
al.'s (NeurIPS 2022) `InfoCascadeLoss`.

Every code dimension starts under a high KL weight; every `release_every` steps one more
dimension, in order, drops to a low weight and may start carrying information:

    loss    = E_q[-log p(x|z)] + sum_d beta_d(t) * KL(q(z_d|x) || N(0, 1))
    beta_d(t) = beta_low  if d < floor(t / release_every)   (dimension d released)
                beta_high otherwise

with t the optimiser steps already taken (0 at the first batch) and d = 0..latent_dim-1.
Montero et al.'s loss lowers beta[i] after step (i + 1) * release_every - 1 (ignite's
iteration - 1), so the batch at t sees the same floor(t / release_every) dimensions released.
A function of t only, so a resumed run continues the schedule exactly. Montero et al.'s
CascadeVAE model also has a 3-way categorical code assigned by a matching solver after 80,000
steps; that discrete part is not modelled here. Defaults: their beta = (2, 10) and a release
every 20,000 steps. Reported extra: `released` (how many dimensions are released).
"""

from __future__ import annotations

from typing import ClassVar

import torch

from raystudy.models.objectives.base import Batch, LossTerms, Objective
from raystudy.models.objectives.registry import OBJECTIVES
from raystudy.models.vae import VAE, bernoulli_nll, gaussian_kl


def released_dimensions(step: int, latent_dim: int, release_every: int) -> int:
    """How many leading code dimensions have their low beta at step t: min(D, t // N)."""
    return min(latent_dim, step // release_every)


@OBJECTIVES.register("cascade_vae")
class CascadeVAE(Objective):
    hyperparameters: ClassVar[tuple[str, ...]] = ("beta_low", "beta_high", "release_every")
    loss_weights: ClassVar[tuple[str, ...]] = ("beta_low", "beta_high")

    def __init__(
        self, beta_low: float = 2.0, beta_high: float = 10.0, release_every: int = 20_000
    ) -> None:
        if release_every < 1:
            raise ValueError(f"release_every must be >= 1, got {release_every}")
        self.beta_low = float(beta_low)
        self.beta_high = float(beta_high)
        self.release_every = int(release_every)

    def __call__(
        self, model: VAE, batch: Batch, *, step: int = 0, kl_weight: float = 1.0
    ) -> LossTerms:
        logits, mu, logvar = model(batch.inputs)
        recon = bernoulli_nll(logits, batch.targets).mean()
        kl_per_dim = gaussian_kl(mu, logvar).mean(dim=0)
        r = released_dimensions(step, kl_per_dim.shape[0], self.release_every)
        # Two sums times two plain weights: a stack of models may hand in per-model tensors.
        penalty = self.beta_low * kl_per_dim[:r].sum() + self.beta_high * kl_per_dim[r:].sum()
        extras = {"released": torch.tensor(float(r), device=mu.device, dtype=mu.dtype)}
        return LossTerms(recon + kl_weight * penalty, recon, kl_per_dim.sum(), extras)
