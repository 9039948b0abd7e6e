"""Encoders whose scores are known by construction, on the images `factor_images` writes:
each image carries its factor indices in its first row of pixels, so `factors` reads the
ground truth back exactly. Imported by name (`known_encoders:factors`) as a user's encoder
would be; the bad ones break one promise each."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

#: A small row-major MPI3D grid (every factor varies; 384 combinations).
SIZES = (2, 2, 2, 2, 2, 3, 4)


def factor_images(path: Path) -> Path:
    """An `mpi3d_file` whose image of each combination holds its indices in pixels
    (0, k, red) for factor k (row-major order, as the official file)."""
    classes = np.stack(np.unravel_index(np.arange(int(np.prod(SIZES))), SIZES), axis=1)
    images = np.zeros((len(classes), 64, 64, 3), dtype=np.uint8)
    images[:, 0, : len(SIZES), 0] = classes
    np.savez(path, images=images)
    return path


def factors(images: torch.Tensor) -> torch.Tensor:
    """The factors themselves, normalised to [0, 1] (as the `own` readout takes them): a
    perfectly disentangled, perfectly informative code."""
    indices = torch.round(images[:, 0, 0, : len(SIZES)] * 255).double()
    return indices / (torch.tensor(SIZES, dtype=torch.float64) - 1)


class Projection(nn.Module):
    """A fixed random linear map of the factors to 10 dimensions: as informative (a linear
    probe recovers every factor exactly), not disentangled."""

    def __init__(self) -> None:
        super().__init__()
        self.map = nn.Linear(len(SIZES), 10)
        generator = torch.Generator().manual_seed(0)
        with torch.no_grad():
            self.map.weight.copy_(torch.randn(10, len(SIZES), generator=generator))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.map(factors(images).float())


def projection() -> nn.Module:
    """A factory, as `package.module:function` may name one."""
    return Projection()


def constant(images: torch.Tensor) -> np.ndarray:
    """The same code for every image: it carries nothing."""
    return np.zeros((images.shape[0], 4))


def flat(images: torch.Tensor) -> torch.Tensor:
    return factors(images).flatten()


def one_row(images: torch.Tensor) -> torch.Tensor:
    return factors(images)[:1]


def with_nan(images: torch.Tensor) -> torch.Tensor:
    codes = factors(images)
    codes[0, 0] = float("nan")
    return codes


def mu_and_logvar(images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    codes = factors(images)
    return codes, codes
