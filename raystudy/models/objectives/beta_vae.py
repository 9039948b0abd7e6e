"""beta-VAE (Higgins et al., ICLR 2017): E_q[-log p(x|z)] + beta * KL(q(z|x) || N(0, I)).

beta = 1 is the plain VAE of Kingma & Welling (2014).
"""

from __future__ import annotations

from raystudy.models.objectives.base import Batch, LossTerms, Objective
from raystudy.models.objectives.registry import OBJECTIVES
from raystudy.models.vae import VAE, bernoulli_nll, gaussian_kl


@OBJECTIVES.register("beta_vae")
class BetaVAE(Objective):
    def __call__(self, model: VAE, batch: Batch, kl_weight: float = 1.0) -> LossTerms:
        logits, mu, logvar = model(batch.inputs)
        recon = bernoulli_nll(logits, batch.targets).mean()
        kl = gaussian_kl(mu, logvar).sum(dim=1).mean()
        return LossTerms(recon + self.beta * kl_weight * kl, recon, kl)
