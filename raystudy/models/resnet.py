"""The deep residual encoder and decoder of Dittadi et al. (ICLR 2021, "On the Transfer of
Disentangled Representations in Realistic Settings", Sec. 4 and App.), for 64 and 128 px.

Encoder: a 5x5 stride-2 convolution to 64 channels, then one stage per halving down to 4x4,
each stage a 1x1 convolution where the channel count changes, `BLOCKS_PER_STAGE` residual
blocks and a 2x2 average pooling; channels 64 -> 128 -> 256 (-> 256 at 128 px); then a dense
layer, LayerNorm, and the linear heads of the posterior. Decoder: the mirror image, with
bilinear upsampling in place of pooling and a final 5x5 convolution to the pixel logits.

A residual block is x + g * conv3x3(lrelu(conv3x3(lrelu(x)))), with a learnable scalar gate g
initialised to 0, so every block starts as the identity and the deep network trains like a
shallow one at first. LayerNorm before the posterior keeps the heads' inputs at a fixed scale
whatever the depth, and the log-variance head starts with small weights (x `LOGVAR_INIT`) and
zero bias, so the initial posterior variances are all close to 1 instead of spread over
orders of magnitude. The paper's exact block counts and dense width are not reproduced here;
the values below are raystudy's.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

BLOCKS_PER_STAGE = 2
DENSE = 512
LOGVAR_INIT = 0.01
LEAKY_SLOPE = 0.02
#: Stage channels by resolution: the stem halves to res/2, each stage halves again to 4x4.
STAGE_CHANNELS: dict[int, tuple[int, ...]] = {64: (64, 128, 256), 128: (64, 128, 256, 256)}


def _stages(resolution: int) -> tuple[int, ...]:
    if resolution not in STAGE_CHANNELS:
        raise ValueError(
            f"the resnet architecture is for {sorted(STAGE_CHANNELS)} px images, got {resolution}"
        )
    return STAGE_CHANNELS[resolution]


class GatedResidualBlock(nn.Module):
    """x + g * conv(lrelu(conv(lrelu(x)))), g a scalar initialised to 0."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.gate = nn.Parameter(torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv1(F.leaky_relu(x, LEAKY_SLOPE))
        h = self.conv2(F.leaky_relu(h, LEAKY_SLOPE))
        return x + self.gate * h


def _stage(c_in: int, c_out: int) -> list[nn.Module]:
    """[1x1 conv if the channel count changes] + the residual blocks at c_out channels."""
    layers: list[nn.Module] = [] if c_in == c_out else [nn.Conv2d(c_in, c_out, 1)]
    return layers + [GatedResidualBlock(c_out) for _ in range(BLOCKS_PER_STAGE)]


class ResNetEncoder(nn.Module):
    def __init__(self, channels: int, latent_dim: int, resolution: int = 64) -> None:
        super().__init__()
        stages = _stages(resolution)
        layers: list[nn.Module] = [nn.Conv2d(channels, stages[0], 5, stride=2, padding=2)]
        c = stages[0]
        for c_out in stages:
            layers += [*_stage(c, c_out), nn.AvgPool2d(2)]
            c = c_out
        self.features = nn.Sequential(*layers)
        self.dense = nn.Linear(c * 4 * 4, DENSE)
        self.norm = nn.LayerNorm(DENSE)
        self.mean = nn.Linear(DENSE, latent_dim)
        self.logvar = nn.Linear(DENSE, latent_dim)
        with torch.no_grad():
            self.logvar.weight.mul_(LOGVAR_INIT)
            self.logvar.bias.zero_()

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = F.leaky_relu(self.features(x), LEAKY_SLOPE).flatten(1)
        h = self.norm(F.leaky_relu(self.dense(h), LEAKY_SLOPE))
        return self.mean(h), self.logvar(h)


class ResNetDecoder(nn.Module):
    def __init__(self, channels: int, latent_dim: int, resolution: int = 64) -> None:
        super().__init__()
        stages = tuple(reversed(_stages(resolution)))
        self.c0 = stages[0]
        self.dense = nn.Sequential(
            nn.Linear(latent_dim, DENSE),
            nn.LeakyReLU(LEAKY_SLOPE),
            nn.Linear(DENSE, self.c0 * 4 * 4),
        )
        layers: list[nn.Module] = []
        c = self.c0
        for c_out in stages:
            layers += _stage(c, c_out)
            layers.append(nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False))
            c = c_out
        # The stem's mirror: back to full resolution, then a 5x5 convolution to the logits.
        layers += [
            nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False),
            nn.LeakyReLU(LEAKY_SLOPE),
            nn.Conv2d(c, channels, 5, padding=2),
        ]
        self.features = nn.Sequential(*layers)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        h = self.dense(z).view(z.shape[0], self.c0, 4, 4)
        return self.features(h)
