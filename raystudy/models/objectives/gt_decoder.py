"""Ground-truth decoder (Montero et al., ICLR 2021, "The role of disentanglement in
generalisation"): the perfectly disentangled reference.

The code is the ground-truth factors, normalised to [0, 1]; only a decoder is trained, to
reconstruct the image from them:

    loss = -log p(x | f(x))   (Bernoulli, summed over pixels, mean over the batch)

The representation a trial evaluates is f itself (the model has `code_is_ground_truth`), so
DCI and MIG are near-perfect by construction. The model also trains an encoder to regress f
(see `reference.py`), on its own: its gradient never reaches the decoder, and it only serves
the paths that start from an image (eval/* and the reconstructions figure). `latent_dim` is
ignored: the code has one dimension per factor. Reported extra: `regression`.
"""

from __future__ import annotations

from typing import ClassVar

import torch

from raystudy.models.objectives.base import Batch, LossTerms, Objective
from raystudy.models.objectives.reference import factor_targets, regression_losses
from raystudy.models.objectives.registry import OBJECTIVES
from raystudy.models.vae import VAE, bernoulli_nll


@OBJECTIVES.register("gt_decoder")
class GroundTruthDecoder(Objective):
    code_is_factor_sized: ClassVar[bool] = True
    code_is_ground_truth: ClassVar[bool] = True

    def __call__(
        self, model: VAE, batch: Batch, *, step: int = 0, kl_weight: float = 1.0
    ) -> LossTerms:
        factors = factor_targets(batch, "gt_decoder")
        recon = bernoulli_nll(model.decode(factors), batch.targets).mean()
        mu, logvar = model.encode(batch.inputs)
        regression, variance = regression_losses(mu, logvar, factors)
        kl = torch.zeros((), device=recon.device, dtype=recon.dtype)
        return LossTerms(recon + regression + variance, recon, kl, {"regression": regression})
