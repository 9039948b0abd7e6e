"""What the two reference objectives share: an encoder that regresses the factors.

The reference models' code has one dimension per ground-truth factor, with the factor
indices normalised to [0, 1] (index / (size - 1)) as the target. The mean head is fitted by
least squares; the log-variance head by the Gaussian likelihood of the residual with the mean
held fixed (sg = stop-gradient), so var(x) estimates the squared error of mu(x) and the paths
that start from an image (eval/*, reconstructions) get a posterior whose samples stay near
the code:

    regression = mean_batch sum_k (mu_k(x) - f_k)^2
    variance   = mean_batch sum_k 0.5 ((f_k - sg[mu_k(x)])^2 / var_k(x) + log var_k(x))
    loss       = regression + VARIANCE_WEIGHT * variance

The two heads share the encoder's trunk. Adam scales each parameter's step by its own gradient
history, so the small weight does not slow the log-variance head (its only gradient is this
term) but keeps the variance term from steering the shared features: with weight 1 the mean
fit on dSprites was visibly worse after 300 steps; with 0.01 it matched pure least squares.
"""

from __future__ import annotations

import torch

from raystudy.models.objectives.base import Batch

VARIANCE_WEIGHT = 0.01


def factor_targets(batch: Batch, objective: str) -> torch.Tensor:
    if batch.factors is None:
        raise ValueError(f"{objective} needs the batch's normalised factors (Batch.factors)")
    return batch.factors


def regression_losses(
    mu: torch.Tensor, logvar: torch.Tensor, factors: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(least-squares loss of the mean head, weighted Gaussian NLL of the log-variance head)."""
    if mu.shape != factors.shape:
        raise ValueError(
            f"the code has {mu.shape[1]} dimensions but there are {factors.shape[1]} factors"
        )
    regression = (mu - factors).pow(2).sum(dim=1).mean()
    residual = (factors - mu.detach()).pow(2)
    variance = (0.5 * (residual * (-logvar).exp() + logvar)).sum(dim=1).mean()
    return regression, VARIANCE_WEIGHT * variance
