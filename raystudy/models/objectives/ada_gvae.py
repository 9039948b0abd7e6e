"""Ada-GVAE (Locatello et al., ICML 2020, "Weakly-Supervised Disentanglement Without
Compromises"; the group averaging of Hosoya, 2019, "Group-based learning of disentangled
representations with generalizability for novel contents").

In the dimensions a pair shares (adaptive threshold, see `weak.py`), both posteriors become
their average: mean of the means and mean of the variances,

    mu~ = (mu1 + mu2) / 2,   var~ = (var1 + var2) / 2,

disentanglement_lib's `GroupVAEArgmax`.
"""

from __future__ import annotations

import torch

from raystudy.models.objectives.registry import OBJECTIVES
from raystudy.models.objectives.weak import KLMode, WeakObjective


def gvae_aggregate(
    mu1: torch.Tensor, logvar1: torch.Tensor, mu2: torch.Tensor, logvar2: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean of the means, log of the mean of the variances)."""
    return 0.5 * (mu1 + mu2), torch.log(0.5 * (logvar1.exp() + logvar2.exp()))


@OBJECTIVES.register("ada_gvae")
class AdaGVAE(WeakObjective):
    aggregate = staticmethod(gvae_aggregate)


def adaptive_average(
    mu1: torch.Tensor,
    logvar1: torch.Tensor,
    mu2: torch.Tensor,
    logvar2: torch.Tensor,
    kl_mode: KLMode = "kl",
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Replace the posteriors of the dimensions judged shared by their GVAE average."""
    return AdaGVAE(kl_mode=kl_mode).share(mu1, logvar1, mu2, logvar2)
