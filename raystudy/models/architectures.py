"""Registry of encoder/decoder architectures: name -> builder(channels, latent_dim, resolution)."""

from __future__ import annotations

from collections.abc import Callable

from torch import nn

from raystudy.models.conv import ConvDecoder, ConvEncoder
from raystudy.registry import Registry

ArchitectureBuilder = Callable[[int, int, int], tuple[nn.Module, nn.Module]]

ARCHITECTURES: Registry[ArchitectureBuilder] = Registry("architecture")


@ARCHITECTURES.register("conv")
def conv(channels: int, latent_dim: int, resolution: int) -> tuple[nn.Module, nn.Module]:
    return ConvEncoder(channels, latent_dim, resolution), ConvDecoder(
        channels, latent_dim, resolution
    )
