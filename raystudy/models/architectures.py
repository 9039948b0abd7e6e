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

import functools
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
#: One side of a model: (channels, features, resolution) -> the encoder of `features` outputs,
#: or the decoder of `features` inputs.
Side = Callable[[int, int, int], nn.Module]

ARCHITECTURES: Registry[ArchitectureBuilder] = Registry("architecture")


def _any_resolution(encoder: Callable[[int, int], nn.Module]) -> Side:
    """An ImageNet encoder, which pools globally and so reads images of any resolution."""
    return lambda channels, features, resolution: encoder(channels, features)


#: name -> (encoder, decoder); the encoder is built first, so a seed gives both their weights.
SIDES: dict[str, tuple[Side, Side]] = {
    "conv": (ConvEncoder, ConvDecoder),
    "resnet": (ResNetEncoder, ResNetDecoder),
    "mlp": (MLPEncoder, MLPDecoder),
    "vanilla_cnn": (VanillaEncoder, VanillaDecoder),
    "coordconv": (functools.partial(VanillaEncoder, coords=True), VanillaDecoder),
    "spatial_transformer": (SpatialTransformerEncoder, VanillaDecoder),
    "rotation_eq": (RotationEqEncoder, VanillaDecoder),
    "resnet50": (_any_resolution(functools.partial(resnet_encoder, "resnet50")), VanillaDecoder),
    "resnet101": (_any_resolution(functools.partial(resnet_encoder, "resnet101")), VanillaDecoder),
    "densenet121": (_any_resolution(densenet121_encoder), VanillaDecoder),
    "bit_resnet50": (
        _any_resolution(functools.partial(bit_encoder, "bit_resnet50")),
        VanillaDecoder,
    ),
    "bit_resnet101": (
        _any_resolution(functools.partial(bit_encoder, "bit_resnet101")),
        VanillaDecoder,
    ),
}


def _builder(encoder: Side, decoder: Side) -> ArchitectureBuilder:
    return lambda channels, latent_dim, resolution, decoder_input_dim: (
        encoder(channels, latent_dim, resolution),
        decoder(channels, decoder_input_dim, resolution),
    )


def _cnnvae(name: str) -> ArchitectureBuilder:
    return lambda channels, latent_dim, resolution, decoder_input_dim: cnnvae.build(
        name, channels, latent_dim, resolution, decoder_input_dim
    )


for _name, (_encoder, _decoder) in SIDES.items():
    ARCHITECTURES.register(_name)(_builder(_encoder, _decoder))
for _name in cnnvae.NETS:
    ARCHITECTURES.register(_name)(_cnnvae(_name))
