"""Schott et al.'s (ICLR 2022) small convolutional networks: their CNN, and the same network
with the inductive biases of CoordConv and of a spatial transformer.

- `VanillaEncoder` is the benchmark's `VanillaCNN` (github.com/bethgelab/
  InDomainGeneralizationBenchmark, `model.py`) and the encoder of SlowVAE's release
  (github.com/bethgelab/slow_disentanglement, `scripts/model.py`, `BetaVAE_H`; both read, not
  copied): four 4x4 stride-2 convolutions 32-32-64-64 (64 -> 4 px), a 4x4 convolution to
  256 x 1 x 1, ReLU after each, and linear heads for the mean and the log-variance (SlowVAE's
  one linear layer to 2 x latent_dim, split in two). Unlike raystudy's `conv`
  (disentanglement_lib's: 2x2 kernels in the last two convolutions, a dense 256 layer), the
  last stage is a convolution.
- `VanillaDecoder` is `BetaVAE_H`'s decoder: linear to 256, a 4x4 transposed convolution to
  64 x 4 x 4, then 4x4 stride-2 transposed convolutions 64-32-32-C (4 -> 64 px).
- Weights start as SlowVAE's `kaiming_init` leaves them: Kaiming-normal (fan-in) linear and
  convolution weights, zero biases; transposed convolutions keep PyTorch's default (the
  release's init skips them). The benchmark's `VanillaCNN` keeps PyTorch's default throughout.
- 32 px drops one 32-channel stride-2 stage a side, 128 px adds one; both keep the 4 x 4
  bottleneck, as `conv.py` does.
- `coordconv` (Liu et al., NeurIPS 2018, "An Intriguing Failing of Convolutional Neural
  Networks and the CoordConv Solution", the CoordConv layer): every encoder convolution also
  reads two channels holding its input's x and y coordinates, each in [-1, 1].
- `spatial_transformer` (Jaderberg et al., NeurIPS 2015, "Spatial Transformer Networks",
  Sec. 3: localisation network, affine grid generator (x_s, y_s) = theta (x_t, y_t, 1), bilinear
  sampler): a localisation network (two 4x4 stride-2 convolutions of 16 channels,
  average-pooled to 4 x 4, a dense 64 layer, six outputs initialised to the identity) predicts
  an affine map theta; the image is resampled bilinearly on the grid theta maps the output
  grid to, and the CNN encodes the result.

The exact networks of Schott et al.'s CoordConv and spatial-transformer models are not in
their released code; these put each bias on their CNN.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from raystudy.models.vae import GaussianEncoder

RESOLUTIONS = (32, 64, 128)
#: 4x4 stride-2 encoder convolutions (in -> out channels; 0 is the image's), per resolution.
ENCODER_STAGES = {
    32: ((0, 32), (32, 64), (64, 64)),
    64: ((0, 32), (32, 32), (32, 64), (64, 64)),
    128: ((0, 32), (32, 32), (32, 32), (32, 64), (64, 64)),
}
#: 4x4 stride-2 decoder transposed convolutions (0 is the image's channels), per resolution.
DECODER_STAGES = {
    32: ((64, 32), (32, 32), (32, 0)),
    64: ((64, 64), (64, 32), (32, 32), (32, 0)),
    128: ((64, 64), (64, 32), (32, 32), (32, 32), (32, 0)),
}
BOTTLENECK = 256


def check_resolution(resolution: int, name: str = "vanilla_cnn") -> None:
    if resolution not in RESOLUTIONS:
        raise ValueError(f"{name} is for 32, 64 or 128 px images, got {resolution}")


def kaiming_init(module: nn.Module) -> None:
    """SlowVAE's `kaiming_init`: Kaiming-normal fan-in weights and zero biases of the linear
    and (not transposed) convolution layers."""
    for m in module.modules():
        if isinstance(m, nn.Linear | nn.Conv2d):
            nn.init.kaiming_normal_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)


def add_coordinates(x: torch.Tensor) -> torch.Tensor:
    """x [B, C, H, W] with two channels more: the column's and the row's coordinate in
    [-1, 1] (CoordConv's AddCoords)."""
    b, _, h, w = x.shape
    ys = torch.linspace(-1.0, 1.0, h, device=x.device, dtype=x.dtype)
    xs = torch.linspace(-1.0, 1.0, w, device=x.device, dtype=x.dtype)
    grid_y, grid_x = torch.meshgrid(ys, xs, indexing="ij")
    coords = torch.stack([grid_x, grid_y]).unsqueeze(0).expand(b, -1, -1, -1)
    return torch.cat([x, coords], dim=1)


class CoordConv2d(nn.Conv2d):
    """A convolution that also reads its input's coordinates (two extra input channels)."""

    def __init__(self, c_in: int, c_out: int, kernel: int, stride: int = 1, padding: int = 0):
        super().__init__(c_in + 2, c_out, kernel, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(add_coordinates(x))


class VanillaEncoder(GaussianEncoder):
    """Schott et al.'s CNN (module doc); with `coords`, every convolution a CoordConv."""

    def __init__(
        self, channels: int, latent_dim: int, resolution: int = 64, coords: bool = False
    ) -> None:
        check_resolution(resolution, "coordconv" if coords else "vanilla_cnn")
        conv = CoordConv2d if coords else nn.Conv2d
        layers: list[nn.Module] = []
        for c_in, c_out in ENCODER_STAGES[resolution]:
            layers += [conv(c_in or channels, c_out, 4, stride=2, padding=1), nn.ReLU()]
        layers += [conv(64, BOTTLENECK, 4), nn.ReLU(), nn.Flatten()]
        super().__init__(nn.Sequential(*layers), BOTTLENECK, latent_dim)
        kaiming_init(self)


class VanillaDecoder(nn.Module):
    """SlowVAE's `BetaVAE_H` decoder (module doc): code -> Bernoulli logits."""

    def __init__(self, channels: int, latent_dim: int, resolution: int = 64) -> None:
        super().__init__()
        check_resolution(resolution)
        layers: list[nn.Module] = [
            nn.Linear(latent_dim, BOTTLENECK),
            nn.ReLU(),
            nn.Unflatten(1, (BOTTLENECK, 1, 1)),
            nn.ConvTranspose2d(BOTTLENECK, 64, 4),
        ]
        for c_in, c_out in DECODER_STAGES[resolution]:
            layers += [nn.ReLU(), nn.ConvTranspose2d(c_in, c_out or channels, 4, 2, padding=1)]
        self.net = nn.Sequential(*layers)
        kaiming_init(self)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(z)


class SpatialTransformerEncoder(VanillaEncoder):
    """The CNN behind a spatial transformer (module doc): x -> resample(x, theta(x)) -> CNN."""

    def __init__(self, channels: int, latent_dim: int, resolution: int = 64) -> None:
        super().__init__(channels, latent_dim, resolution)
        self.localisation = nn.Sequential(
            nn.Conv2d(channels, 16, 4, stride=2, padding=1),
            nn.ReLU(),
            nn.Conv2d(16, 16, 4, stride=2, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(4),
            nn.Flatten(),
            nn.Linear(16 * 4 * 4, 64),
            nn.ReLU(),
        )
        self.theta = nn.Linear(64, 6)
        # The identity map to start with (Jaderberg et al.'s initialisation): the encoder
        # first sees the image as it is and learns to move away from it.
        with torch.no_grad():
            self.theta.weight.zero_()
            self.theta.bias.copy_(torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 0.0]))

    def transform(self, x: torch.Tensor) -> torch.Tensor:
        """The image resampled on the predicted affine grid (zeros outside the image)."""
        theta = self.theta(self.localisation(x)).view(-1, 2, 3)
        grid = F.affine_grid(theta, list(x.shape), align_corners=False)
        return F.grid_sample(x, grid, align_corners=False)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return super().forward(self.transform(x))
