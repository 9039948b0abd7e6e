"""Ground-truth decoder (Montero et al., ICLR 2021, "The role of disentanglement in
generalisation", section 3): the perfectly disentangled reference.

The code is the ground-truth factors, normalised to [0, 1]; only a decoder is trained, to
reconstruct the image from them:

    loss = -log p(x | f)   (Bernoulli, summed over pixels, mean over the batch)

No image is ever encoded: the model's encoder is a `NoImageEncoder` that refuses to run, and
every path that scores or draws the model (eval/* on seen and held-out combinations, the
metrics, probes, reconstructions and traversals) starts from the true factors of the images it
is shown. The paper's GT decoder is Higgins et al.'s MLP decoder (`architecture: mlp`, as
`search_spaces/montero2021.yaml` sets it). `latent_dim` is ignored: the code has one dimension
per factor.
"""

from __future__ import annotations

from typing import ClassVar

import torch

from raystudy.models.objectives.base import Batch, LossTerms, Objective
from raystudy.models.objectives.reference import factor_targets
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
        kl = torch.zeros((), device=recon.device, dtype=recon.dtype)
        return LossTerms(recon, recon, kl)
