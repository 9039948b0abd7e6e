"""The fully connected encoder and decoder of Higgins et al. (ICLR 2017, "beta-VAE", Table 1,
dSprites row), as disentanglement_lib's `fc_encoder` / `fc_decoder`.

Encoder: flatten, FC 1200 ReLU, FC 1200 ReLU, then linear heads for the mean and the
log-variance. Decoder: FC 1200 tanh, FC 1200 tanh, FC 1200 tanh, FC C*H*W Bernoulli logits.
Works at any resolution (the first and last layers grow with it).
"""

from __future__ import annotations

import torch
from torch import nn

from raystudy.models.vae import GaussianEncoder

HIDDEN = 1200


class MLPEncoder(GaussianEncoder):
    def __init__(self, channels: int, latent_dim: int, resolution: int = 64) -> None:
        features = nn.Sequential(
            nn.Flatten(),
            nn.Linear(channels * resolution * resolution, HIDDEN),
            nn.ReLU(),
            nn.Linear(HIDDEN, HIDDEN),
            nn.ReLU(),
        )
        super().__init__(features, HIDDEN, latent_dim)


class MLPDecoder(nn.Module):
    def __init__(self, channels: int, latent_dim: int, resolution: int = 64) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(latent_dim, HIDDEN),
            nn.Tanh(),
            nn.Linear(HIDDEN, HIDDEN),
            nn.Tanh(),
            nn.Linear(HIDDEN, HIDDEN),
            nn.Tanh(),
            nn.Linear(HIDDEN, channels * resolution * resolution),
            nn.Unflatten(1, (channels, resolution, resolution)),
        )

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(z)
