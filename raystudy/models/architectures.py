"""Registry of encoder/decoder architectures:
name -> builder(channels, latent_dim, resolution, decoder_input_dim).

The decoder reads `decoder_input_dim` features: latent_dim, or the size of an objective's
`decoder_head` output (LieGroupVAE's flattened group element, CascadeVAE's [z; c]). The
encoder's `latent_dim` outputs are the code's, or the features an objective's `encoder_head`
reads (LieGroupVAE's group features).

- `conv`: disentanglement_lib's 64x64 convolutional encoder/decoder, and a 32x32 variant
  with one stride-2 stage fewer a side (`conv.py`).
- `resnet`: Dittadi et al.'s deep residual encoder/decoder, 64 or 128 px (`resnet.py`).
- `mlp`: Higgins et al.'s 1200-1200 fully connected encoder/decoder (`mlp.py`).
"""

from __future__ import annotations

from collections.abc import Callable

from torch import nn

from raystudy.models.conv import ConvDecoder, ConvEncoder
from raystudy.models.mlp import MLPDecoder, MLPEncoder
from raystudy.models.resnet import ResNetDecoder, ResNetEncoder
from raystudy.registry import Registry

ArchitectureBuilder = Callable[[int, int, int, int], tuple[nn.Module, nn.Module]]

ARCHITECTURES: Registry[ArchitectureBuilder] = Registry("architecture")


@ARCHITECTURES.register("conv")
def conv(
    channels: int, latent_dim: int, resolution: int, decoder_input_dim: int
) -> tuple[nn.Module, nn.Module]:
    return ConvEncoder(channels, latent_dim, resolution), ConvDecoder(
        channels, decoder_input_dim, resolution
    )


@ARCHITECTURES.register("resnet")
def resnet(
    channels: int, latent_dim: int, resolution: int, decoder_input_dim: int
) -> tuple[nn.Module, nn.Module]:
    return ResNetEncoder(channels, latent_dim, resolution), ResNetDecoder(
        channels, decoder_input_dim, resolution
    )


@ARCHITECTURES.register("mlp")
def mlp(
    channels: int, latent_dim: int, resolution: int, decoder_input_dim: int
) -> tuple[nn.Module, nn.Module]:
    return MLPEncoder(channels, latent_dim, resolution), MLPDecoder(
        channels, decoder_input_dim, resolution
    )
