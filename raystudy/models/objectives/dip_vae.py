"""DIP-VAE-I and DIP-VAE-II (Kumar et al., ICLR 2018, "Variational Inference of Disentangled
Latent Concepts from Unlabeled Observations", Eqs. 6-7).

Both push a covariance matrix Cov of the aggregate posterior towards the identity:

    penalty(Cov) = lambda_od * sum_{i != j} Cov_ij^2 + lambda_d * sum_i (Cov_ii - 1)^2
    loss = E_q[-log p(x|z)] + KL(q(z|x) || N(0, I)) + penalty(Cov)

- DIP-VAE-I: Cov = Cov_batch[mu(x)], the covariance of the posterior means over the batch
  (E[mu mu^T] - E[mu] E[mu]^T, normalised by the batch size B, not B - 1);
  lambda_d = 10 * lambda_od.
- DIP-VAE-II: Cov = E_batch[diag(var(x))] + Cov_batch[mu(x)], the covariance of z under the
  batch's mixture of posteriors; lambda_d = lambda_od.

These are disentanglement_lib's `DIPVAE` with its study's lambda_d_factor (10 for I, 1 for II);
the study sweeps lambda_od in {1, 2, 5, 10, 20, 50}; the default here, 10, lies inside it.
Reported extra: `dip` (the penalty before the warm-up factor).
"""

from __future__ import annotations

from typing import ClassVar

import torch
from pydantic import Field

from raystudy.models.objectives.base import Batch, LossTerms, Objective, ObjectiveParams
from raystudy.models.objectives.registry import OBJECTIVES
from raystudy.models.vae import VAE, elbo_terms


def batch_covariance(x: torch.Tensor) -> torch.Tensor:
    """Covariance of the rows of x [B, D] with the 1/B normalisation: [D, D]."""
    centred = x - x.mean(dim=0, keepdim=True)
    return centred.T @ centred / x.shape[0]


def dip_penalty(cov: torch.Tensor, lambda_od: float, lambda_d: float) -> torch.Tensor:
    """lambda_od * (squared off-diagonal entries) + lambda_d * (squared diagonal minus 1)."""
    diag = torch.diagonal(cov)
    off_diag_sq = cov.pow(2).sum() - diag.pow(2).sum()
    return lambda_od * off_diag_sq + lambda_d * (diag - 1.0).pow(2).sum()


class DIPVAEParams(ObjectiveParams):
    lambda_od: float = Field(
        10.0,
        ge=0.0,
        description="off-diagonal covariance weight; the diagonal weight is 10x (I) or 1x (II)",
    )


class _DIPVAE(Objective):
    Params = DIPVAEParams
    loss_weights: ClassVar[tuple[str, ...]] = ("lambda_od",)
    #: lambda_d = lambda_d_factor * lambda_od.
    lambda_d_factor: ClassVar[float]
    lambda_od: float

    def __init__(self, **options: float) -> None:
        super().__init__(**options)
        self.lambda_d = self.lambda_d_factor * self.lambda_od

    def with_weights(self, **weights: float | torch.Tensor) -> Objective:
        clone = super().with_weights(**weights)
        if "lambda_od" in weights:  # lambda_d follows lambda_od, as in the constructor
            clone.lambda_d = self.lambda_d_factor * weights["lambda_od"]  # type: ignore[attr-defined]
        return clone

    def covariance(self, mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def __call__(
        self, model: VAE, batch: Batch, *, step: int = 0, kl_weight: float = 1.0
    ) -> LossTerms:
        mu, logvar, _, recon, kl = elbo_terms(model, batch.inputs, batch.targets)
        dip = dip_penalty(self.covariance(mu, logvar), self.lambda_od, self.lambda_d)
        return LossTerms(recon + kl_weight * (kl + dip), recon, kl, {"dip": dip})


@OBJECTIVES.register("dip_vae_i")
class DIPVAEI(_DIPVAE):
    lambda_d_factor: ClassVar[float] = 10.0

    def covariance(self, mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
        return batch_covariance(mu)


@OBJECTIVES.register("dip_vae_ii")
class DIPVAEII(_DIPVAE):
    lambda_d_factor: ClassVar[float] = 1.0

    def covariance(self, mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
        return torch.diag(logvar.exp().mean(dim=0)) + batch_covariance(mu)
