"""Fully supervised encoder: the reference of what the architecture can extract at all.

The encoder regresses the normalised ground-truth factors (least squares on its mean head,
see `reference.py`); its mean is the representation. A decoder is trained on the detached
mean, so the encoder's training is purely supervised while eval/* and the reconstructions
figure still work:

    loss = regression + 0.01 * variance (see reference.py) + -log p(x | sg[mu(x)])

`latent_dim` is ignored: the code has one dimension per factor. A factor that the image does
not determine (dSprites' orientation of the square repeats every 90 degrees) is regressed to
its conditional mean. Reported extra: `regression`; `kl` is reported as 0.
"""

from __future__ import annotations

from typing import ClassVar

import torch

from raystudy.models.objectives.base import Batch, LossTerms, Objective
from raystudy.models.objectives.reference import factor_targets, regression_losses
from raystudy.models.objectives.registry import OBJECTIVES
from raystudy.models.vae import VAE, bernoulli_nll


@OBJECTIVES.register("supervised")
class Supervised(Objective):
    code_is_factor_sized: ClassVar[bool] = True

    def __call__(
        self, model: VAE, batch: Batch, *, step: int = 0, kl_weight: float = 1.0
    ) -> LossTerms:
        factors = factor_targets(batch, "supervised")
        mu, logvar = model.encode(batch.inputs)
        regression, variance = regression_losses(mu, logvar, factors)
        recon = bernoulli_nll(model.decode(mu.detach()), batch.targets).mean()
        kl = torch.zeros((), device=recon.device, dtype=recon.dtype)
        return LossTerms(regression + variance + recon, recon, kl, {"regression": regression})
