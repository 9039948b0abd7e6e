"""What every objective is: a per-batch loss over a VAE, with the terms it reports."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import torch

from raystudy.models.vae import VAE


@dataclass
class Batch:
    """Encoder inputs (possibly noisy) and decoder targets (clean), [B, C, H, W] each.

    Weakly supervised objectives also get the second image of each pair.
    """

    inputs: torch.Tensor
    targets: torch.Tensor
    inputs2: torch.Tensor | None = None
    targets2: torch.Tensor | None = None


@dataclass
class LossTerms:
    """`loss` is what is minimised; `recon` and `kl` are per-image means, for reporting."""

    loss: torch.Tensor
    recon: torch.Tensor
    kl: torch.Tensor


class Objective(ABC):
    #: True when the objective trains on pairs of images that differ in k factors.
    pairs: ClassVar[bool] = False

    def __init__(self, beta: float = 1.0) -> None:
        self.beta = beta

    @abstractmethod
    def __call__(self, model: VAE, batch: Batch, kl_weight: float = 1.0) -> LossTerms:
        """`kl_weight` in [0, 1] is the linear KL warm-up factor applied on top of beta."""
