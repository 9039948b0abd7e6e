"""The standard 64x64 convolutional encoder and decoder of disentanglement_lib.

Locatello et al. (2019), Table 1 / `architectures.conv_encoder` and `deconv_decoder`:
encoder conv 32-32-64-64 (kernels 4, 4, 2, 2; stride 2; ReLU), FC 256, then separate linear
heads for the mean and the log-variance; decoder FC 256, FC 1024 (reshaped 64x4x4), transposed
convs 64-32-32-C (kernel 4, stride 2), producing Bernoulli logits. TensorFlow's "same" padding
is padding 1 for the 4x4 stride-2 layers and 0 for the 2x2 ones, which keeps the 64-32-16-8-4
resolutions of the reference.
"""

from __future__ import annotations

import torch
from torch import nn


class ConvEncoder(nn.Module):
    def __init__(self, channels: int, latent_dim: int, resolution: int = 64) -> None:
        super().__init__()
        if resolution != 64:
            raise ValueError(f"the conv architecture is for 64x64 images, got {resolution}")
        self.features = nn.Sequential(
            nn.Conv2d(channels, 32, 4, stride=2, padding=1),
            nn.ReLU(),
            nn.Conv2d(32, 32, 4, stride=2, padding=1),
            nn.ReLU(),
            nn.Conv2d(32, 64, 2, stride=2),
            nn.ReLU(),
            nn.Conv2d(64, 64, 2, stride=2),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(64 * 4 * 4, 256),
            nn.ReLU(),
        )
        self.mean = nn.Linear(256, latent_dim)
        self.logvar = nn.Linear(256, latent_dim)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.features(x)
        return self.mean(h), self.logvar(h)


class ConvDecoder(nn.Module):
    def __init__(self, channels: int, latent_dim: int, resolution: int = 64) -> None:
        super().__init__()
        if resolution != 64:
            raise ValueError(f"the conv architecture is for 64x64 images, got {resolution}")
        self.net = nn.Sequential(
            nn.Linear(latent_dim, 256),
            nn.ReLU(),
            nn.Linear(256, 1024),
            nn.ReLU(),
            nn.Unflatten(1, (64, 4, 4)),
            nn.ConvTranspose2d(64, 64, 4, stride=2, padding=1),
            nn.ReLU(),
            nn.ConvTranspose2d(64, 32, 4, stride=2, padding=1),
            nn.ReLU(),
            nn.ConvTranspose2d(32, 32, 4, stride=2, padding=1),
            nn.ReLU(),
            nn.ConvTranspose2d(32, channels, 4, stride=2, padding=1),
        )

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(z)
