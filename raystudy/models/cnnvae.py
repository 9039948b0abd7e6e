"""The convolutional VAEs of Montero et al. (ICLR 2021)'s code: Burgess et al. (2018)'s net and
the two variants its run scripts train, 64x64 only.

Their code builds each model from a layer list (mmrl/disent-and-gen,
``scripts/configs/cnnvae.py``) and makes the decoder the encoder transposed
(``src/models/feedforward.py::transpose_layer_defs``); every conv is 4x4, stride 2, padding 1
(64 -> 32 -> 16 -> 8 -> 4), ReLU after every layer but the last of each side:

============  ==================  ==========  ======================================
name          encoder convs       FC layers   used by (``scripts/bin/run-disent.sh``)
============  ==================  ==========  ======================================
burgess       32, 32, 32, 32      256, 256    none; Burgess et al. (2018, App. A.1):
                                              the net the paper's App. A names
burgess_v2    32, 32, 64, 64      256, 256    the dSprites beta-VAEs
kim           32, 32, 64, 64      256         the dSprites FactorVAEs, every 3dshapes
                                              and MPI3D model
============  ==================  ==========  ======================================

The encoder's last layer is one linear map to 2 x latent_dim, read as (mean, log-variance)
(``src/models/stochastic.py::DiagonalGaussian``). The decoder is FC latent_dim -> the FC
sizes in reverse -> channels x 4 x 4 of the last conv, then transposed convs back through
the conv channels in reverse to the image's channels (Bernoulli logits). ``kim``'s decoder is
disentanglement_lib's deconv decoder (raystudy's ``conv``); its encoder differs from
``conv``'s in the last two convs, 4x4 with padding 1 here, 2x2 without padding there.

Weights start as the authors' do (``src/models/initialization.py::weights_init``, applied by
their ``LGM``): Kaiming-uniform with the ReLU gain for every conv, transposed conv and linear
weight, biases left at PyTorch's default.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

RESOLUTION = 64
#: name -> (encoder conv channels, encoder FC sizes), from the authors' cnnvae.py.
NETS: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    "burgess": ((32, 32, 32, 32), (256, 256)),
    "burgess_v2": ((32, 32, 64, 64), (256, 256)),
    "kim": ((32, 32, 64, 64), (256,)),
}
_SIDE = 4  # 64 px after four stride-2 convs


def _check_resolution(name: str, resolution: int) -> None:
    if resolution != RESOLUTION:
        raise ValueError(
            f"the {name} architecture is the authors' 64x64 net (four stride-2 convs), "
            f"got {resolution}x{resolution} images"
        )


def init_like_the_authors(module: nn.Module) -> None:
    """Kaiming-uniform (ReLU gain) weights for every conv and linear layer of ``module``."""
    for layer in module.modules():
        if isinstance(layer, nn.Conv2d | nn.ConvTranspose2d | nn.Linear):
            nn.init.kaiming_uniform_(layer.weight, nonlinearity="relu")


def _encoder_layers(
    channels: int, convs: Sequence[int], fcs: Sequence[int]
) -> tuple[list[nn.Module], int]:
    """The encoder's convs and FC layers, each with its ReLU, and the width they end in."""
    layers: list[nn.Module] = []
    c_in = channels
    for c_out in convs:
        layers += [nn.Conv2d(c_in, c_out, 4, stride=2, padding=1), nn.ReLU()]
        c_in = c_out
    layers.append(nn.Flatten())
    width = c_in * _SIDE * _SIDE
    for size in fcs:
        layers += [nn.Linear(width, size), nn.ReLU()]
        width = size
    return layers, width


def _decoder_layers(
    channels: int, latent_dim: int, convs: Sequence[int], fcs: Sequence[int]
) -> list[nn.Module]:
    """The encoder transposed: FC layers in reverse, then transposed convs back to logits."""
    layers: list[nn.Module] = []
    width = latent_dim
    for size in reversed(fcs):
        layers += [nn.Linear(width, size), nn.ReLU()]
        width = size
    top = convs[-1]
    layers += [nn.Linear(width, top * _SIDE * _SIDE), nn.ReLU(), nn.Unflatten(1, (top, 4, 4))]
    # Each encoder conv c_in -> c_out transposes to c_out -> c_in; the first one's c_in is
    # the image's channels, and no ReLU follows it (logits).
    ins = (channels, *convs[:-1])
    for i, (c_out, c_in) in reversed(list(enumerate(zip(ins, convs, strict=True)))):
        layers.append(nn.ConvTranspose2d(c_in, c_out, 4, stride=2, padding=1))
        if i:
            layers.append(nn.ReLU())
    return layers


class CNNEncoder(nn.Module):
    def __init__(
        self, channels: int, latent_dim: int, convs: Sequence[int], fcs: Sequence[int]
    ) -> None:
        super().__init__()
        layers, width = _encoder_layers(channels, convs, fcs)
        self.features = nn.Sequential(*layers)
        self.posterior = nn.Linear(width, 2 * latent_dim)
        init_like_the_authors(self)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, logvar = self.posterior(self.features(x)).chunk(2, dim=-1)
        return mean, logvar


class CNNDecoder(nn.Module):
    def __init__(
        self, channels: int, latent_dim: int, convs: Sequence[int], fcs: Sequence[int]
    ) -> None:
        super().__init__()
        self.net = nn.Sequential(*_decoder_layers(channels, latent_dim, convs, fcs))
        init_like_the_authors(self)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(z)


def build(
    name: str, channels: int, latent_dim: int, resolution: int, decoder_input_dim: int
) -> tuple[nn.Module, nn.Module]:
    """The encoder and decoder of the authors' net ``name`` (a key of :data:`NETS`)."""
    _check_resolution(name, resolution)
    convs, fcs = NETS[name]
    return (
        CNNEncoder(channels, latent_dim, convs, fcs),
        CNNDecoder(channels, decoder_input_dim, convs, fcs),
    )
