"""Ada-ML-VAE (Locatello et al., ICML 2020), the adaptive version of the ML-VAE of
Bouchacourt et al. (AAAI 2018, "Multi-Level Variational Autoencoder").

In the dimensions a pair shares (adaptive threshold, see `weak.py`), both posteriors become
a product of the two experts. As in disentanglement_lib's `MLVae`, each expert enters with
power 1/2 (a normalised geometric mean of the two densities), so a pair is not made twice as
certain as either image:

    q~(z_i) ∝ (q(z_i|x1) q(z_i|x2))^(1/2)
    1 / var~ = (1 / var1 + 1 / var2) / 2,    mu~ = var~ (mu1 / var1 + mu2 / var2) / 2

i.e. the precision is the mean of the precisions and the mean is the precision-weighted mean.
"""

from __future__ import annotations

import torch

from raystudy.models.objectives.registry import OBJECTIVES
from raystudy.models.objectives.weak import WeakObjective


def poe_aggregate(
    mu1: torch.Tensor, logvar1: torch.Tensor, mu2: torch.Tensor, logvar2: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(precision-weighted mean, log of the harmonic mean of the variances)."""
    prec1, prec2 = (-logvar1).exp(), (-logvar2).exp()
    precision = 0.5 * (prec1 + prec2)
    mu = 0.5 * (mu1 * prec1 + mu2 * prec2) / precision
    return mu, -torch.log(precision)


@OBJECTIVES.register("ml_vae")
class MLVAE(WeakObjective):
    aggregate = staticmethod(poe_aggregate)
