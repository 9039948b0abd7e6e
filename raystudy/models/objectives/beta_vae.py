"""beta-VAE (Higgins et al., ICLR 2017) and the plain VAE (Kingma & Welling, ICLR 2014).

    loss = E_q(z|x)[-log p(x|z)] + beta * KL(q(z|x) || N(0, I))

one posterior sample per image, Bernoulli likelihood summed over pixels, means over the batch
(disentanglement_lib's `BetaVAE`). `vae` is the same loss with beta fixed at 1; it reads no
hyperparameter, so a sweep over `beta` leaves it unchanged. disentanglement_lib's study sweeps
beta in {1, 2, 4, 6, 8, 16}.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from raystudy.models.objectives.base import Batch, LossTerms, Objective, ObjectiveParams
from raystudy.models.objectives.registry import OBJECTIVES
from raystudy.models.vae import VAE, elbo_terms


class BetaVAEParams(ObjectiveParams):
    beta: float = Field(1.0, ge=0.0, description="weight of the KL")


@OBJECTIVES.register("beta_vae")
class BetaVAE(Objective):
    Params = BetaVAEParams
    loss_weights: ClassVar[tuple[str, ...]] = ("beta",)
    beta: float

    def __call__(
        self, model: VAE, batch: Batch, *, step: int = 0, kl_weight: float = 1.0
    ) -> LossTerms:
        _, _, _, recon, kl = elbo_terms(model, batch.inputs, batch.targets)
        return LossTerms(recon + kl_weight * self.beta * kl, recon, kl)


@OBJECTIVES.register("vae")
class PlainVAE(BetaVAE):
    Params = ObjectiveParams
    loss_weights: ClassVar[tuple[str, ...]] = ()
    beta = 1.0
