"""``circles`` and ``simple``: one sprite on black whose position (and, in ``simple``, shape) are
the factors, the two Spriteworld datasets of Montero et al. (NeurIPS 2022, "Lost in Latent
Space"; their code loads them from pre-generated files, ``src/dataset/spriteworld.py``).

Their code fixes the factor order, ``circles``: x, y; ``simple``: x, y, shape (the splits in
``scripts/configs/datasplits.py`` index them so), and the README says what they hold: Circles
"a circle in different positions of an image", Simple "an extension of the circles dataset
containing two shapes instead of one". The files, and so the grid and the sprite's size, are
not public; these values are raystudy's choice:

- 64x64, one channel: a white sprite on black, as dSprites.
- ``pos_x``, ``pos_y``: 32 centres each, ``linspace(0.1, 0.9, 32)`` of the image width
  (x to the right, y downwards), so a sprite never leaves the image and the paper's held-out
  regions (``midpos``: both positions in [0.35, 0.65]; ``shape2px``: both > 0.5) are whole
  runs of grid values.
- ``circles``: a disc of radius 0.08. ``simple``: ``shape`` 0 is that disc, 1 an axis-aligned
  square of the same area (half side ``0.08 sqrt(pi) / 2``), so the shape cannot be read off
  the image's total brightness. The paper's held-out shape is class 1, the square.
- Anti-aliased as dSprites (:func:`raystudy.data.sources.procedural.sdf.coverage`), deterministic.
- Domains: ``sim`` and ``real`` (:mod:`raystudy.data.domains.real`, seeded by ``real_seed``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from raystudy.data.core.factors import Factor
from raystudy.data.core.registry import register_dataset
from raystudy.data.sources.procedural import sdf
from raystudy.data.sources.procedural.dataset import ProceduralDataset, placed

NUM_POSITIONS = 32
POSITIONS = tuple(np.linspace(0.1, 0.9, NUM_POSITIONS).tolist())
RADIUS = 0.08
SQUARE_HALF_SIDE = RADIUS * math.sqrt(math.pi) / 2.0  # same area as the disc
SHAPE_NAMES = ("circle", "square")


def position_factors() -> tuple[Factor, Factor]:
    return (
        Factor("pos_x", NUM_POSITIONS, POSITIONS),
        Factor("pos_y", NUM_POSITIONS, POSITIONS),
    )


@dataclass(frozen=True)
class _Tables:
    centres: torch.Tensor  # [P] image-space centres
    pixels: torch.Tensor  # [R] pixel-centre coordinates


@register_dataset("circles")
class Circles(ProceduralDataset):
    """Circles (Montero et al. 2022): one white disc on black at 32 x 32 positions, 64x64.

    Options: ``resolution`` (default 64), ``real_seed`` (the ``real`` domain's seed, default 0).
    """

    name = "circles"
    channels = 1

    def _factor_tuple(self) -> tuple[Factor, ...]:
        return position_factors()

    def _render_sim(self, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        t = self._device_tables(idx.device)
        # Offsets of each pixel centre from the sprite centre: [B, 1, R] (x) and [B, R, 1] (y).
        dx = (t.pixels.view(1, 1, -1) - t.centres[idx[:, 0]].view(-1, 1, 1)).expand(
            -1, self.resolution, -1
        )
        dy = (t.pixels.view(1, -1, 1) - t.centres[idx[:, 1]].view(-1, 1, 1)).expand(
            -1, -1, self.resolution
        )
        distance = self._distance(idx, dx, dy)
        cover = sdf.coverage(distance * self.resolution, 1.0).unsqueeze(1)
        return cover, cover.clone()

    def _distance(self, idx: torch.Tensor, dx: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
        return torch.hypot(dx, dy) - RADIUS

    def _build_tables(self, device: torch.device) -> _Tables:
        res = self.resolution
        pixels = (torch.arange(res, dtype=torch.float64) + 0.5) / res
        centres = torch.tensor(POSITIONS, dtype=torch.float64)
        return placed(_Tables(centres=centres, pixels=pixels), device)


@register_dataset("simple")
class Simple(Circles):
    """Simple (Montero et al. 2022): a white disc or square on black at 32 x 32 positions.

    Options: ``resolution`` (default 64), ``real_seed`` (the ``real`` domain's seed, default 0).
    """

    name = "simple"

    def _factor_tuple(self) -> tuple[Factor, ...]:
        return (*position_factors(), Factor("shape", len(SHAPE_NAMES), (0.0, 1.0)))

    def _distance(self, idx: torch.Tensor, dx: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
        disc = torch.hypot(dx, dy) - RADIUS
        square = sdf.box(dx, dy, SQUARE_HALF_SIDE, SQUARE_HALF_SIDE)
        return torch.where((idx[:, 2] == 1).view(-1, 1, 1), square, disc)
