"""Ada-GVAE (Locatello et al., ICML 2020, "Weakly-supervised disentanglement without compromises").

Trains on pairs (x1, x2) that differ in k factors, k unknown to the model. Per pair and latent
dimension, delta_i = KL(q(z_i|x1) || q(z_i|x2)); the threshold tau = (max_i delta_i +
min_i delta_i) / 2 estimates which dimensions changed. Dimensions with delta_i < tau are taken
as shared and both posteriors there are replaced by their average (GVAE: mean of the means,
mean of the variances). The loss is the beta-VAE ELBO of both images under these posteriors.
"""

from __future__ import annotations

import torch

from raystudy.models.objectives.base import Batch, LossTerms, Objective
from raystudy.models.objectives.registry import OBJECTIVES
from raystudy.models.vae import VAE, bernoulli_nll, gaussian_kl, gaussian_kl_between


def adaptive_average(
    mu1: torch.Tensor, logvar1: torch.Tensor, mu2: torch.Tensor, logvar2: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Replace the posteriors of the dimensions judged shared by their GVAE average."""
    delta = gaussian_kl_between(mu1, logvar1, mu2, logvar2)
    tau = 0.5 * (delta.max(dim=1, keepdim=True).values + delta.min(dim=1, keepdim=True).values)
    shared = delta < tau
    avg_mu = 0.5 * (mu1 + mu2)
    avg_logvar = torch.log(0.5 * (logvar1.exp() + logvar2.exp()))
    return (
        torch.where(shared, avg_mu, mu1),
        torch.where(shared, avg_logvar, logvar1),
        torch.where(shared, avg_mu, mu2),
        torch.where(shared, avg_logvar, logvar2),
    )


@OBJECTIVES.register("ada_gvae")
class AdaGVAE(Objective):
    pairs = True

    def __call__(self, model: VAE, batch: Batch, kl_weight: float = 1.0) -> LossTerms:
        if batch.inputs2 is None or batch.targets2 is None:
            raise ValueError("ada_gvae trains on pairs: the batch has no second image")
        mu1, logvar1 = model.encode(batch.inputs)
        mu2, logvar2 = model.encode(batch.inputs2)
        mu1, logvar1, mu2, logvar2 = adaptive_average(mu1, logvar1, mu2, logvar2)
        z1 = model.reparameterize(mu1, logvar1)
        z2 = model.reparameterize(mu2, logvar2)
        # Both decoders in one call: half the kernel launches of two calls.
        logits = model.decode(torch.cat([z1, z2]))
        targets = torch.cat([batch.targets, batch.targets2])
        recon = bernoulli_nll(logits, targets).mean()
        kl = torch.cat([gaussian_kl(mu1, logvar1), gaussian_kl(mu2, logvar2)]).sum(dim=1).mean()
        return LossTerms(recon + self.beta * kl_weight * kl, recon, kl)
