"""The standard 64x64 convolutional encoder and decoder of disentanglement_lib, and a 32x32 variant.

Locatello et al. (2019), Table 1 / `architectures.conv_encoder` and `deconv_decoder`:
encoder conv 32-32-64-64 (kernels 4, 4, 2, 2; stride 2; ReLU), FC 256, then separate linear
heads for the mean and the log-variance; decoder FC 256, FC 1024 (reshaped 64x4x4), transposed
convs 64-32-32-C (kernel 4, stride 2), producing Bernoulli logits. TensorFlow's "same" padding
is padding 1 for the 4x4 stride-2 layers and 0 for the 2x2 ones, which keeps the 64-32-16-8-4
resolutions of the reference.

At 32x32 (a laptop setting: about four times the training steps per CPU second, measured in
`bench/laptop_settings.py`) the encoder drops its second 4x4 stride-2 conv and the decoder its
first 4x4 transposed conv, so both still meet at the same 64x4x4 bottleneck and FC layers.
"""

from __future__ import annotations

import torch
from torch import nn

from raystudy.models.vae import GaussianEncoder

RESOLUTIONS = (32, 64)


def _check_resolution(resolution: int) -> None:
    if resolution not in RESOLUTIONS:
        raise ValueError(f"the conv architecture is for 32x32 or 64x64 images, got {resolution}")


class ConvEncoder(GaussianEncoder):
    def __init__(self, channels: int, latent_dim: int, resolution: int = 64) -> None:
        _check_resolution(resolution)
        # 64 -> 32 -> 16 -> 8 -> 4, or 32 -> 16 -> 8 -> 4 without the second 4x4 stage.
        stride_4x4: list[nn.Module] = [
            nn.Conv2d(channels, 32, 4, stride=2, padding=1),
            nn.ReLU(),
        ]
        if resolution == 64:
            stride_4x4 += [nn.Conv2d(32, 32, 4, stride=2, padding=1), nn.ReLU()]
        features = nn.Sequential(
            *stride_4x4,
            nn.Conv2d(32, 64, 2, stride=2),
            nn.ReLU(),
            nn.Conv2d(64, 64, 2, stride=2),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(64 * 4 * 4, 256),
            nn.ReLU(),
        )
        super().__init__(features, 256, latent_dim)


class ConvDecoder(nn.Module):
    def __init__(self, channels: int, latent_dim: int, resolution: int = 64) -> None:
        super().__init__()
        _check_resolution(resolution)
        first: list[nn.Module] = []
        if resolution == 64:
            first = [nn.ConvTranspose2d(64, 64, 4, stride=2, padding=1), nn.ReLU()]
        self.net = nn.Sequential(
            nn.Linear(latent_dim, 256),
            nn.ReLU(),
            nn.Linear(256, 1024),
            nn.ReLU(),
            nn.Unflatten(1, (64, 4, 4)),
            *first,
            nn.ConvTranspose2d(64, 32, 4, stride=2, padding=1),
            nn.ReLU(),
            nn.ConvTranspose2d(32, 32, 4, stride=2, padding=1),
            nn.ReLU(),
            nn.ConvTranspose2d(32, channels, 4, stride=2, padding=1),
        )

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(z)
