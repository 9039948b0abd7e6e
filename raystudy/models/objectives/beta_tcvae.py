"""beta-TCVAE (Chen et al., NeurIPS 2018, "Isolating Sources of Disentanglement in VAEs").

Eq. 5 with alpha = gamma = 1, which leaves the ELBO plus (beta - 1) times the total
correlation of the aggregate posterior q(z):

    loss = E_q[-log p(x|z)] + KL(q(z|x) || N(0, I)) + (beta - 1) * TC
    TC   = E_q(z)[log q(z) - sum_d log q(z_d)]

TC is estimated on the batch, at one sample z_i ~ q(z|x_i) per image, with q(z) taken as the
batch's mixture of posteriors (minibatch-weighted sampling, Chen et al. Sec. 4.1):

    log q(z_i)   ~= logsumexp_j log q(z_i | x_j) - log B
    log q(z_i,d) ~= logsumexp_j log q(z_i,d | x_j) - log B

Chen et al. subtract log(N B) with N the dataset size, and disentanglement_lib's
`total_correlation` drops the constants; both differ from this estimate by a constant
((D - 1) log N, resp. (D - 1) log B), so the gradients are the same. With log B the reported
`tc` is the total correlation of the batch mixture itself. disentanglement_lib's study sweeps
beta in {1, 2, 4, 6, 8, 10}.
"""

from __future__ import annotations

import math
from typing import ClassVar

import torch
from pydantic import Field

from raystudy.models.objectives.base import Batch, LossTerms, Objective, ObjectiveParams
from raystudy.models.objectives.registry import OBJECTIVES
from raystudy.models.vae import VAE, elbo_terms, gaussian_log_density


def total_correlation(z: torch.Tensor, mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    """Minibatch estimate of TC from samples z [B, D] of the posteriors (mu, logvar) [B, D]."""
    b = z.shape[0]
    # [i, j, d]: log q(z_i,d | x_j), every sample under every image's posterior.
    log_q = gaussian_log_density(z.unsqueeze(1), mu.unsqueeze(0), logvar.unsqueeze(0))
    log_qz = torch.logsumexp(log_q.sum(dim=2), dim=1) - math.log(b)
    log_marginals = (torch.logsumexp(log_q, dim=1) - math.log(b)).sum(dim=1)
    return (log_qz - log_marginals).mean()


class BetaTCVAEParams(ObjectiveParams):
    beta: float = Field(1.0, ge=0.0, description="weight of the TC (1: the plain ELBO)")


@OBJECTIVES.register("beta_tcvae")
class BetaTCVAE(Objective):
    Params = BetaTCVAEParams
    loss_weights: ClassVar[tuple[str, ...]] = ("beta",)
    beta: float

    def __call__(
        self, model: VAE, batch: Batch, *, step: int = 0, kl_weight: float = 1.0
    ) -> LossTerms:
        mu, logvar, z, recon, kl = elbo_terms(model, batch.inputs, batch.targets)
        tc = total_correlation(z, mu, logvar)
        loss = recon + kl_weight * (kl + (self.beta - 1.0) * tc)
        return LossTerms(loss, recon, kl, {"tc": tc})
