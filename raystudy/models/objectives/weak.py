"""What the weakly supervised objectives share (Locatello et al., ICML 2020, "Weakly-Supervised
Disentanglement Without Compromises", Sec. 4).

Training data are pairs (x1, x2) whose factors differ in k of them (the model is not told
which). Per pair and latent dimension i, a divergence delta_i between the two posteriors

    kl:           delta_i = KL(q(z_i|x1) || q(z_i|x2))
    symmetric_kl: delta_i = (KL(q(z_i|x1) || q(z_i|x2)) + KL(q(z_i|x2) || q(z_i|x1))) / 2

is compared with the adaptive threshold tau = (max_i delta_i + min_i delta_i) / 2: dimensions
with delta_i < tau are taken as shared by the pair, and both posteriors there are replaced by
one aggregate (GVAE: an average; ML-VAE: a product of experts). The loss is the beta-VAE loss
of both images under the modified posteriors, averaged over the 2B images (disentanglement_lib
averages the two halves, the same thing):

    loss = mean_images E_q~[-log p(x|z)] + beta * mean_images KL(q~(z|x) || N(0, I))

Pairs come from the training loop: `k` is 1, a fixed count, or "random", drawn per pair
uniformly in 1..K-1 (K = factors that vary in the split's encoder set), as the pair generator
of Locatello et al. does (disentanglement_lib's `simple_dynamics` draws k per pair, then
changes only one factor in half of the pairs and may redraw a factor's old value; raystudy
changes exactly k factors). disentanglement_lib's weak study sweeps beta in
{1, 2, 4, 6, 8, 16}.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Annotated, ClassVar, Literal

import torch
from pydantic import Field

from raystudy.models.objectives.base import Batch, LossTerms, Objective, ObjectiveParams, PairK
from raystudy.models.vae import VAE, bernoulli_nll, gaussian_kl, gaussian_kl_between

KLMode = Literal["kl", "symmetric_kl"]
KL_MODES: tuple[str, ...] = ("kl", "symmetric_kl")


def pair_divergence(
    mu1: torch.Tensor,
    logvar1: torch.Tensor,
    mu2: torch.Tensor,
    logvar2: torch.Tensor,
    kl_mode: KLMode = "kl",
) -> torch.Tensor:
    """delta [B, D] per pair and dimension (see the module doc)."""
    forward = gaussian_kl_between(mu1, logvar1, mu2, logvar2)
    if kl_mode == "kl":
        return forward
    if kl_mode == "symmetric_kl":
        return 0.5 * (forward + gaussian_kl_between(mu2, logvar2, mu1, logvar1))
    raise ValueError(f"unknown kl_mode {kl_mode!r}; allowed: {', '.join(KL_MODES)}")


def shared_dimensions(delta: torch.Tensor) -> torch.Tensor:
    """Boolean [B, D]: delta_i below the pair's threshold (max delta + min delta) / 2."""
    tau = 0.5 * (delta.max(dim=1, keepdim=True).values + delta.min(dim=1, keepdim=True).values)
    return delta < tau


class WeakParams(ObjectiveParams):
    beta: float = Field(1.0, ge=0.0, description="weight of the KL")
    kl_mode: KLMode = Field("kl", description="divergence that decides the shared dimensions")
    k: Annotated[int, Field(ge=1, strict=True)] | Literal["random"] = Field(
        1,
        description="factors that differ within a pair; random: uniform in 1..K-1 per pair",
    )


class WeakObjective(Objective):
    """A weakly supervised objective: subclasses say how shared dimensions are aggregated."""

    Params = WeakParams
    pairs: ClassVar[bool] = True
    loss_weights: ClassVar[tuple[str, ...]] = ("beta",)
    beta: float
    kl_mode: KLMode
    k: PairK

    @property
    def pair_k(self) -> PairK:
        return self.k

    @staticmethod
    @abstractmethod
    def aggregate(
        mu1: torch.Tensor, logvar1: torch.Tensor, mu2: torch.Tensor, logvar2: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The one posterior (mean, log-variance) both images get in a shared dimension."""

    def share(
        self, mu1: torch.Tensor, logvar1: torch.Tensor, mu2: torch.Tensor, logvar2: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """The pair's posteriors with the shared dimensions replaced by the aggregate."""
        shared = shared_dimensions(pair_divergence(mu1, logvar1, mu2, logvar2, self.kl_mode))
        agg_mu, agg_logvar = self.aggregate(mu1, logvar1, mu2, logvar2)
        return (
            torch.where(shared, agg_mu, mu1),
            torch.where(shared, agg_logvar, logvar1),
            torch.where(shared, agg_mu, mu2),
            torch.where(shared, agg_logvar, logvar2),
        )

    def __call__(
        self, model: VAE, batch: Batch, *, step: int = 0, kl_weight: float = 1.0
    ) -> LossTerms:
        inputs2, targets2 = self.second_images(batch)
        n = batch.inputs.shape[0]
        # Both halves through each network in one call: half the kernel launches of two calls.
        mu, logvar = model.encode(torch.cat([batch.inputs, inputs2]))
        mu1, logvar1, mu2, logvar2 = self.share(mu[:n], logvar[:n], mu[n:], logvar[n:])
        mu, logvar = torch.cat([mu1, mu2]), torch.cat([logvar1, logvar2])
        logits = model.decode(model.reparameterize(mu, logvar))
        targets = torch.cat([batch.targets, targets2])
        recon = bernoulli_nll(logits, targets).mean()
        kl = gaussian_kl(mu, logvar).sum(dim=1).mean()
        return LossTerms(recon + kl_weight * self.beta * kl, recon, kl)
