"""A trained model's encoder on its own: images [B, C, H, W] in [0, 1] -> the representation
means [B, D] its trial was scored on (`raystudy.scoring.encode_means`).

This is the module a trial logs as its MLflow model (`raystudy.tracking.models`): a copy of
the encoder, on the CPU and in evaluation mode, so that it loads on any machine and reuses no
memory of the live model the trial goes on with. gt_decoder has none (its code is the factors
themselves, which no image gives), and `representation_encoder` says so.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from raystudy.models.vae import VAE


class NoRepresentationEncoder(ValueError):
    """A model whose representation no image encoder computes (gt_decoder)."""


class RepresentationEncoder(nn.Module):
    """Images -> posterior means: the first output of a Gaussian encoder's (mu, logvar)."""

    def __init__(self, encoder: nn.Module, channels: int, resolution: int) -> None:
        super().__init__()
        self.encoder = encoder
        # Recorded for the MLflow signature and for a user who finds the module on its own.
        self.channels, self.resolution = channels, resolution

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.encoder(images)[0]

    def example_input(self, batch: int = 2) -> torch.Tensor:
        """Images of the shape this encoder takes (a batch of 2: torch.export fixes a size-1
        batch dimension as a constant, and the logged model must take any batch size)."""
        return torch.rand(batch, self.channels, self.resolution, self.resolution)


def representation_encoder(model: VAE, channels: int, resolution: int) -> RepresentationEncoder:
    """A CPU copy of `model`'s encoder in evaluation mode, contiguous (a model trained
    channels-last or compiled gives the same module). Raises `NoRepresentationEncoder` for a
    model whose code is the ground-truth factors."""
    if model.code_is_ground_truth:
        raise NoRepresentationEncoder(
            "gt_decoder's code is the ground-truth factors themselves: no image encoder "
            "computes it, so there is no encoder to log"
        )
    encoder = copy.deepcopy(model.encoder).to("cpu", memory_format=torch.contiguous_format)
    # `nn.Module.compile()` keeps its compiled call on the module: a copy must run eagerly.
    for module in encoder.modules():
        module._compiled_call_impl = None
    return RepresentationEncoder(encoder, channels, resolution).eval()
