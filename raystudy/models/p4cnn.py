"""A rotation-equivariant encoder (Schott et al., ICLR 2022, Sec. 4, "Rotation-EQ"): Schott et
al.'s CNN (`vanilla_cnn.py`) with its convolutions made equivariant to rotations by multiples
of 90 degrees, the P4 group convolutions of Cohen & Welling (ICML 2016, "Group Equivariant
Convolutional Networks", Sec. 6: the G-correlation of the first layer, on the image, and
of the further layers, on the group), in plain torch.

- The first layer lifts the image to the group: each filter W is applied in its four
  rotations, out[c, r] = x * rot^r(W_c) (a correlation, as `conv2d`).
- Every further layer convolves on the group: a feature map has four rotation channels per
  channel, and out[c, r] = sum_{c', s} f[c', s] * rot^r(W_{c, c', (s - r) mod 4}).
- Rotating the input by 90 degrees rotates each output map and shifts its rotation channels
  by one (exactly so for stride 1 and odd kernels; the stride-2 4x4 layers used here keep it
  up to the sampling grid's offset).

Channels are halved (16-16-32-32) against the CNN's, since each carries four rotation maps.
The readout is not invariant: the 4x4 convolution to 256 reads the rotation channels as
plain channels, so that a factor that *is* a rotation (dSprites' orientation) can still be
read out. Schott et al. do not publish this network; the decoder is the CNN's.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from raystudy.models.vae import GaussianEncoder
from raystudy.models.vanilla_cnn import BOTTLENECK, ENCODER_STAGES, check_resolution

ROTATIONS = 4


def _init_uniform(weight: torch.Tensor, fan_in: int) -> None:
    # PyTorch's default for a convolution of this fan-in (Kaiming-uniform, a = sqrt(5)).
    bound = 1.0 / math.sqrt(fan_in)
    nn.init.uniform_(weight, -bound, bound)


class LiftingConv(nn.Module):
    """Image [B, C, H, W] -> P4 feature map [B, C_out * 4, H', W'] (rotation minor)."""

    def __init__(self, c_in: int, c_out: int, kernel: int, stride: int, padding: int) -> None:
        super().__init__()
        self.stride, self.padding = stride, padding
        self.weight = nn.Parameter(torch.empty(c_out, c_in, kernel, kernel))
        self.bias = nn.Parameter(torch.empty(c_out))
        _init_uniform(self.weight, c_in * kernel * kernel)
        _init_uniform(self.bias, c_in * kernel * kernel)

    def filters(self) -> torch.Tensor:
        rotated = [torch.rot90(self.weight, r, dims=(2, 3)) for r in range(ROTATIONS)]
        return torch.stack(rotated, dim=1).flatten(0, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bias = self.bias.repeat_interleave(ROTATIONS)
        return F.conv2d(x, self.filters(), bias, stride=self.stride, padding=self.padding)


class GroupConv(nn.Module):
    """P4 feature map [B, C_in * 4, H, W] -> [B, C_out * 4, H', W'] (module doc)."""

    def __init__(self, c_in: int, c_out: int, kernel: int, stride: int, padding: int) -> None:
        super().__init__()
        self.stride, self.padding = stride, padding
        self.weight = nn.Parameter(torch.empty(c_out, c_in, ROTATIONS, kernel, kernel))
        self.bias = nn.Parameter(torch.empty(c_out))
        fan_in = c_in * ROTATIONS * kernel * kernel
        _init_uniform(self.weight, fan_in)
        _init_uniform(self.bias, fan_in)

    def filters(self) -> torch.Tensor:
        # Output rotation r: the filter's rotation axis shifted by r, each slice rotated r times.
        rotated = [
            torch.rot90(torch.roll(self.weight, shifts=r, dims=2), r, dims=(3, 4))
            for r in range(ROTATIONS)
        ]
        return torch.stack(rotated, dim=1).flatten(0, 1).flatten(1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bias = self.bias.repeat_interleave(ROTATIONS)
        return F.conv2d(x, self.filters(), bias, stride=self.stride, padding=self.padding)


class RotationEqEncoder(GaussianEncoder):
    """The P4 CNN (module doc): images -> (mu, logvar)."""

    def __init__(self, channels: int, latent_dim: int, resolution: int = 64) -> None:
        check_resolution(resolution, "rotation_eq")
        layers: list[nn.Module] = []
        for c_in, c_out in ENCODER_STAGES[resolution]:
            if c_in == 0:
                layers.append(LiftingConv(channels, c_out // 2, 4, stride=2, padding=1))
            else:
                layers.append(GroupConv(c_in // 2, c_out // 2, 4, stride=2, padding=1))
            layers.append(nn.ReLU())
        last = ENCODER_STAGES[resolution][-1][1] // 2 * ROTATIONS
        layers += [nn.Conv2d(last, BOTTLENECK, 4), nn.ReLU(), nn.Flatten()]
        super().__init__(nn.Sequential(*layers), BOTTLENECK, latent_dim)
