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
- `burgess`, `burgess_v2`, `kim`: the 64x64 conv nets of Montero et al. (2021)'s code:
  Burgess et al. (2018)'s, and the two its run scripts train (`cnnvae.py`).
- Schott et al.'s (2022) networks trained from scratch, each with the `vanilla_cnn` decoder:
  `vanilla_cnn` (their CNN, SlowVAE's encoder), `coordconv`, `spatial_transformer`
  (`vanilla_cnn.py`), `rotation_eq` (P4 group convolutions, `p4cnn.py`), and the ImageNet
  networks `resnet50`, `resnet101`, `densenet121` in torchvision's layout and BiT's
  ResNet-v2s `bit_resnet50`, `bit_resnet101`, which the `supervised_pretrained` objective
  starts from a user's weights file (`imagenet_nets.py`, `bit_resnet.py`).
"""

from __future__ import annotations

from collections.abc import Callable

from torch import nn

from raystudy.models import cnnvae
from raystudy.models.conv import ConvDecoder, ConvEncoder
from raystudy.models.imagenet_nets import bit_encoder, densenet121_encoder, resnet_encoder
from raystudy.models.mlp import MLPDecoder, MLPEncoder
from raystudy.models.p4cnn import RotationEqEncoder
from raystudy.models.resnet import ResNetDecoder, ResNetEncoder
from raystudy.models.vanilla_cnn import SpatialTransformerEncoder, VanillaDecoder, VanillaEncoder
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


@ARCHITECTURES.register("burgess")
def burgess(
    channels: int, latent_dim: int, resolution: int, decoder_input_dim: int
) -> tuple[nn.Module, nn.Module]:
    return cnnvae.build("burgess", channels, latent_dim, resolution, decoder_input_dim)


@ARCHITECTURES.register("burgess_v2")
def burgess_v2(
    channels: int, latent_dim: int, resolution: int, decoder_input_dim: int
) -> tuple[nn.Module, nn.Module]:
    return cnnvae.build("burgess_v2", channels, latent_dim, resolution, decoder_input_dim)


@ARCHITECTURES.register("kim")
def kim(
    channels: int, latent_dim: int, resolution: int, decoder_input_dim: int
) -> tuple[nn.Module, nn.Module]:
    return cnnvae.build("kim", channels, latent_dim, resolution, decoder_input_dim)


@ARCHITECTURES.register("vanilla_cnn")
def vanilla_cnn(
    channels: int, latent_dim: int, resolution: int, decoder_input_dim: int
) -> tuple[nn.Module, nn.Module]:
    return VanillaEncoder(channels, latent_dim, resolution), VanillaDecoder(
        channels, decoder_input_dim, resolution
    )


@ARCHITECTURES.register("coordconv")
def coordconv(
    channels: int, latent_dim: int, resolution: int, decoder_input_dim: int
) -> tuple[nn.Module, nn.Module]:
    return VanillaEncoder(channels, latent_dim, resolution, coords=True), VanillaDecoder(
        channels, decoder_input_dim, resolution
    )


@ARCHITECTURES.register("spatial_transformer")
def spatial_transformer(
    channels: int, latent_dim: int, resolution: int, decoder_input_dim: int
) -> tuple[nn.Module, nn.Module]:
    return SpatialTransformerEncoder(channels, latent_dim, resolution), VanillaDecoder(
        channels, decoder_input_dim, resolution
    )


@ARCHITECTURES.register("rotation_eq")
def rotation_eq(
    channels: int, latent_dim: int, resolution: int, decoder_input_dim: int
) -> tuple[nn.Module, nn.Module]:
    return RotationEqEncoder(channels, latent_dim, resolution), VanillaDecoder(
        channels, decoder_input_dim, resolution
    )


@ARCHITECTURES.register("resnet50")
def resnet50(
    channels: int, latent_dim: int, resolution: int, decoder_input_dim: int
) -> tuple[nn.Module, nn.Module]:
    return resnet_encoder("resnet50", channels, latent_dim), VanillaDecoder(
        channels, decoder_input_dim, resolution
    )


@ARCHITECTURES.register("resnet101")
def resnet101(
    channels: int, latent_dim: int, resolution: int, decoder_input_dim: int
) -> tuple[nn.Module, nn.Module]:
    return resnet_encoder("resnet101", channels, latent_dim), VanillaDecoder(
        channels, decoder_input_dim, resolution
    )


@ARCHITECTURES.register("densenet121")
def densenet121(
    channels: int, latent_dim: int, resolution: int, decoder_input_dim: int
) -> tuple[nn.Module, nn.Module]:
    return densenet121_encoder(channels, latent_dim), VanillaDecoder(
        channels, decoder_input_dim, resolution
    )


@ARCHITECTURES.register("bit_resnet50")
def bit_resnet50(
    channels: int, latent_dim: int, resolution: int, decoder_input_dim: int
) -> tuple[nn.Module, nn.Module]:
    return bit_encoder("bit_resnet50", channels, latent_dim), VanillaDecoder(
        channels, decoder_input_dim, resolution
    )


@ARCHITECTURES.register("bit_resnet101")
def bit_resnet101(
    channels: int, latent_dim: int, resolution: int, decoder_input_dim: int
) -> tuple[nn.Module, nn.Module]:
    return bit_encoder("bit_resnet101", channels, latent_dim), VanillaDecoder(
        channels, decoder_input_dim, resolution
    )
