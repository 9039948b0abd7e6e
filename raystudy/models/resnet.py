"""The deep residual encoder and decoder of Dittadi et al. (ICLR 2021, "On the Transfer of
Disentangled Representations in Realistic Settings", Sec. 4 and App. A, Tables 2-4), for 64
and 128 px.

Encoder: a 5x5 stride-2 convolution to 64 channels, then stages of two residual blocks each,
a 1x1 convolution before a stage where the channel count changes, 2x2 average pooling after a
stage until the features are 4x4; then a dense layer, LayerNorm, and the linear heads of the
posterior. Decoder: the mirror image, with bilinear upsampling in place of pooling and a final
5x5 convolution to the pixel logits.

A residual block is x + g * conv3x3(lrelu(conv3x3(lrelu(x)))), with a learnable scalar gate g
initialised to 0, so every block starts as the identity and the deep network trains like a
shallow one at first. LayerNorm before the posterior keeps the heads' inputs at a fixed scale
whatever the depth, and the log-variance head starts with small weights (x `LOGVAR_INIT`) and
zero bias, so the initial posterior variances are all close to 1.

At 128 px (the paper's resolution) this is the paper's network: five stages at 64, 128, 128,
256 and 256 channels, i.e. 10 residual blocks and 23 convolutional layers in the encoder, and
16.41M parameters for RGB images and 10 latents (the paper: "approximately 16.3M"; counted
with `num_parameters(build_model("resnet", 3, 10, 128))`, 2026-11-25). Where it may still
differ, because the paper's text lost the numbers: the dense width (512 here, which gives the
paper's parameter count), which four of the five stages are followed by a pooling (here the
first four), the log-variance head's initial scale and bias, and the leaky ReLU slope. At 64 px
the network is raystudy's own: three stages (64, 128, 256), 10.50M parameters.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

BLOCKS_PER_STAGE = 2
DENSE = 512
LOGVAR_INIT = 0.01
LEAKY_SLOPE = 0.02
#: Stage channels by resolution (a stage is a pair of residual blocks, after a 1x1 convolution
#: where the channel count changes). 128 px is the paper's Table 3: five pairs at 64, 128, 128,
#: 256, 256 channels. 64 px is raystudy's own, one pair fewer at each width.
STAGE_CHANNELS: dict[int, tuple[int, ...]] = {64: (64, 128, 256), 128: (64, 128, 128, 256, 256)}


def _stages(resolution: int) -> tuple[int, ...]:
    if resolution not in STAGE_CHANNELS:
        raise ValueError(
            f"the resnet architecture is for {sorted(STAGE_CHANNELS)} px images, got {resolution}"
        )
    return STAGE_CHANNELS[resolution]


def _halvings(resolution: int) -> int:
    """Poolings after the stem (res -> res/2) that bring the features to 4x4: the first this
    many stages are followed by one, the rest run at 4x4 (the decoder mirrors it)."""
    return (resolution // 8).bit_length() - 1


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
        halvings = _halvings(resolution)
        for i, c_out in enumerate(stages):
            layers += _stage(c, c_out) + ([nn.AvgPool2d(2)] if i < halvings else [])
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
        first_up = len(stages) - _halvings(resolution)
        for i, c_out in enumerate(stages):
            layers += _stage(c, c_out)
            if i >= first_up:
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
