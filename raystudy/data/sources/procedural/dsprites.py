"""Procedural dSprites and colour-dSprites, rendered in torch from factor indices.

dSprites (Matthey et al. 2017, https://github.com/deepmind/dsprites-dataset) is the full grid
shape 3 x scale 6 x orientation 40 x pos_x 32 x pos_y 32 of 64x64 binary images of one white
sprite on black. ``color_dsprites`` adds a last factor ``hue`` (12 hues k/12 at full saturation
and value), the colour variant used for hue-OOD transfer by Dittadi et al. (2021, "On the
Transfer of Disentangled Representations in Realistic Settings").

Conventions (the procedural renderer's own; it is not pixel-identical to the official files):

- Image coordinates are normalised to [0, 1]; x grows to the right along columns and y grows
  *downwards* along rows, so ``pos_y`` index 0 is at the top of the image.
- ``pos`` in [0, 1] maps to a centre in [MARGIN, 1 - MARGIN] = [0.2, 0.8] of the image, so a
  sprite at scale 1 (which spans about 0.3 of the width) stays mostly inside, as in dSprites.
- Orientation: 40 angles ``2 pi k / 40`` in [0, 2 pi) (the official files use 40 points of the
  closed interval [0, 2 pi], whose first and last images coincide). A positive angle turns the
  sprite clockwise on screen, because y points down. The square repeats every 10 steps
  (90 degrees) and the ellipse every 20 (180 degrees); only the heart is unique over all 40,
  so the orientation factor is not injective for two of the three shapes. The option
  ``orientation_bins=n`` replaces the 40 angles by ``n`` angles ``(pi / 2) k / n`` of one
  quarter turn, the largest range on which every shape's orientation is injective (the
  square's period), for studies that regress orientation. The option
  ``orientation_grid="closed"`` uses the official files' angles instead, ``2 pi k / 39``,
  k = 0..39: with it a split holds out what it holds out in the papers' data. On the default
  grid a symmetric shape's turn by 90 or 180 degrees lands on another grid angle, so e.g.
  every ellipse Montero et al.'s recombination-to-element holds out (orientation 14..25) has
  a pixel-identical twin at orientation - 20 in training; on the official angles the twin
  lies half a step (4.6 degrees) away, as in the paper.
- Shapes at scale 1: square of side 0.3, ellipse with semi-axes 0.15 x 0.075 (2:1; its long
  axis lies along x at orientation 0), heart 0.3 wide with its tip down. ``scale`` multiplies
  every length.
- Anti-aliasing: pixel coverage is a linear ramp of the signed distance over one pixel
  (:func:`raystudy.data.sources.procedural.sdf.coverage`), so sub-pixel moves change pixel
  values. There is no randomness: the same indices give the same image.
- Domains: ``sim`` and ``real`` (:mod:`raystudy.data.domains.real`, seeded by ``real_seed``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import torch

from raystudy.data.core.factors import Factor, FactorSpace
from raystudy.data.core.grids import dsprites_factors
from raystudy.data.core.registry import register_dataset
from raystudy.data.sources.procedural import sdf
from raystudy.data.sources.procedural.colour import hue_to_rgb
from raystudy.data.sources.procedural.dataset import (
    ProceduralDataset,
    check_real_seed,
    check_resolution,
    placed,
)

MARGIN = 0.2
SQUARE_HALF_SIDE = 0.15
ELLIPSE_SEMI_AXES = (0.15, 0.075)
HEART_HALF_DIAGONAL = 0.3 / (1.0 + math.sqrt(2.0))  # the heart is (1 + sqrt2) h wide
SHAPE_NAMES = ("square", "ellipse", "heart")
NUM_HUES = 12


def _max_sprite_radius() -> float:
    """Farthest any sprite point gets from its centre at scale 1 (bounds the render window)."""
    square = SQUARE_HALF_SIDE * math.sqrt(2.0)
    ellipse = max(ELLIPSE_SEMI_AXES)
    h = HEART_HALF_DIAGONAL
    # Geometry of sdf.heart after its centring shift: tip at 1.1036 h below the centre, lobe
    # discs of radius h / sqrt2 centred at (+-h/2, -0.3964 h).
    heart = max(1.1036 * h, math.hypot(0.5 * h, 0.3964 * h) + h / math.sqrt(2.0))
    return max(square, ellipse, heart)


# Shape-frame SDFs, in the order of the ``shape`` factor.
_SHAPE_SDFS: tuple[Callable[[torch.Tensor, torch.Tensor], torch.Tensor], ...] = (
    partial(sdf.box, half_w=SQUARE_HALF_SIDE, half_h=SQUARE_HALF_SIDE),
    partial(sdf.ellipse, a=ELLIPSE_SEMI_AXES[0], b=ELLIPSE_SEMI_AXES[1]),
    partial(sdf.heart, h=HEART_HALF_DIAGONAL),
)


def hue_factor() -> Factor:
    return Factor("hue", NUM_HUES, tuple(k / NUM_HUES for k in range(NUM_HUES)))


def _window_start(centre: torch.Tensor, res: int, window: int) -> torch.Tensor:
    """First pixel row or column ``[B, 1]`` of a window around each centre (``[B, 1]`` in
    [0, 1]), shifted to lie inside the image; a shifted window still holds the sprite's
    visible part."""
    return (torch.round(centre * res).long() - window // 2).clamp(0, res - window)


@dataclass(frozen=True)
class _DeviceTables:
    """Per-device constants: built once, then every batch is pure gathers and arithmetic."""

    window: int  # side in pixels of the square that holds any sprite
    offsets: torch.Tensor  # arange(window)
    window_pixels: torch.Tensor  # [window * window]: i * R + j, flat offsets inside a window
    scale: torch.Tensor
    cos: torch.Tensor
    sin: torch.Tensor
    pos_x: torch.Tensor  # image-space centres
    pos_y: torch.Tensor
    rgb: torch.Tensor | None  # [num_hues, 3]


@register_dataset("dsprites")
class DSprites(ProceduralDataset):
    """dSprites: one white sprite on black, 64x64, one channel.

    Options: ``resolution`` (default 64), ``orientation_bins`` (default: the 40 angles of the
    official grid), ``orientation_grid`` (``open``, default, or ``closed``: the official
    files' angles), ``real_seed`` (the ``real`` domain's seed, default 0).
    """

    name = "dsprites"
    channels = 1

    def __init__(
        self,
        resolution: int = 64,
        orientation_bins: int | None = None,
        real_seed: int = 0,
        orientation_grid: str = "open",
    ) -> None:
        check_resolution(resolution, smallest=8)
        if orientation_bins is not None and not 1 <= orientation_bins <= 40:
            raise ValueError(f"orientation_bins must be in 1..40, got {orientation_bins}")
        self.resolution = resolution
        self.real_seed = check_real_seed(real_seed)
        self.factors = FactorSpace(self._factor_tuple(orientation_bins, orientation_grid))

    def _factor_tuple(
        self, orientation_bins: int | None, orientation_grid: str
    ) -> tuple[Factor, ...]:
        return dsprites_factors(orientation_bins, orientation_grid)

    def _render_sim(self, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # Sorting by shape makes each shape's images one contiguous slice (no masked copies);
        # the sort is undone on the one-channel windows, the smallest per-pixel tensors.
        order = torch.argsort(idx[:, 0], stable=True)
        cover, origin = self._sprite_windows(idx[order])
        cover = torch.empty_like(cover).index_copy_(0, order, cover)
        origin = torch.empty_like(origin).index_copy_(0, order, origin)
        image = self._paste(self._colour(idx, cover), origin)
        # Every hue has V = 1, so the brightest channel is the sprite's coverage.
        return image, image.amax(dim=1, keepdim=True)

    def _colour(self, idx: torch.Tensor, cover: torch.Tensor) -> torch.Tensor:
        return cover.unsqueeze(1)

    def _sprite_windows(self, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Anti-aliased sprite coverage in a square window around each sprite.

        Every sprite fits in a window of ``t.window`` pixels (its largest radius at scale 1
        plus the anti-aliasing ramp), so only that window is evaluated: a quarter of the image
        at 64x64. Returns coverage ``[B, w, w]`` and each window's top-left pixel as a flat
        image offset ``row * R + col``, ``[B]``. ``idx`` must be sorted by shape.
        """
        t = self._device_tables(idx.device)
        res, win = self.resolution, t.window
        scale = t.scale[idx[:, 1]].unsqueeze(1)
        cos = t.cos[idx[:, 2]].unsqueeze(1)
        sin = t.sin[idx[:, 2]].unsqueeze(1)
        cx = t.pos_x[idx[:, 3]].unsqueeze(1)
        cy = t.pos_y[idx[:, 4]].unsqueeze(1)
        col0 = _window_start(cx, res, win)
        row0 = _window_start(cy, res, win)
        # The frame change (undo rotation, then scale) is separable: per-axis terms are
        # [B, w]; only their sums below are [B, w, w].
        dx = (((col0 + t.offsets).float() + 0.5) / res - cx) / scale
        dy = (((row0 + t.offsets).float() + 0.5) / res - cy) / scale
        u = (cos * dx).unsqueeze(1) + (sin * dy).unsqueeze(2)
        v = (cos * dy).unsqueeze(2) - (sin * dx).unsqueeze(1)
        counts = torch.bincount(idx[:, 0], minlength=len(_SHAPE_SDFS)).tolist()
        pieces = []
        start = 0
        for shape_sdf, count in zip(_SHAPE_SDFS, counts, strict=True):
            if count:
                pieces.append(shape_sdf(u[start : start + count], v[start : start + count]))
            start += count
        distance = torch.cat(pieces) if len(pieces) > 1 else pieces[0]
        # Sprite-frame distances shrink with the scale; the ramp is one image pixel wide.
        cover = sdf.coverage(distance * (scale.unsqueeze(2) * res), 1.0)
        return cover, (row0 * res + col0).squeeze(1)

    def _paste(self, windows: torch.Tensor, origin: torch.Tensor) -> torch.Tensor:
        """Black images with each window ``[C, w, w]`` written at its flat pixel ``origin``.

        A window pixel's flat image position is its origin plus a fixed ``i * R + j``, the
        same for every channel, so one scatter with a channel-broadcast index places them all.
        """
        batch, channels = windows.shape[0], windows.shape[1]
        res = self.resolution
        t = self._device_tables(windows.device)
        pixel = (origin.unsqueeze(1) + t.window_pixels).unsqueeze(1)
        out = torch.zeros((batch, channels, res * res), dtype=torch.float32, device=windows.device)
        out.scatter_(2, pixel.expand(-1, channels, -1), windows.reshape(batch, channels, -1))
        return out.view(batch, channels, res, res)

    def _build_tables(self, device: torch.device) -> _DeviceTables:
        res = self.resolution
        space = self.factors

        def values(name: str) -> torch.Tensor:
            vals = space.factors[space.index(name)].values
            return torch.tensor(vals, dtype=torch.float64)

        angles = values("orientation")
        span = 1.0 - 2.0 * MARGIN
        rgb = hue_to_rgb(values("hue")) if "hue" in space.names else None
        # Half-window: the largest sprite radius in pixels, plus half a pixel of anti-aliasing
        # ramp, plus up to one pixel lost to rounding the window's origin.
        max_scale = float(values("scale").max())
        half = math.ceil(_max_sprite_radius() * max_scale * res + 1.5)
        window = min(res, 2 * half)
        offsets = torch.arange(window)
        tables = _DeviceTables(
            window=window,
            offsets=offsets,
            window_pixels=(offsets.view(-1, 1) * res + offsets).view(-1),
            scale=values("scale"),
            cos=torch.cos(angles),
            sin=torch.sin(angles),
            pos_x=MARGIN + span * values("pos_x"),
            pos_y=MARGIN + span * values("pos_y"),
            rgb=rgb,
        )
        return placed(tables, device)


@register_dataset("color_dsprites")
class ColorDSprites(DSprites):
    """dSprites with a sprite of one of 12 hues (full saturation and value) on black."""

    name = "color_dsprites"
    channels = 3

    def _factor_tuple(
        self, orientation_bins: int | None, orientation_grid: str
    ) -> tuple[Factor, ...]:
        return (*dsprites_factors(orientation_bins, orientation_grid), hue_factor())

    def _colour(self, idx: torch.Tensor, cover: torch.Tensor) -> torch.Tensor:
        rgb = self._device_tables(idx.device).rgb
        assert rgb is not None  # built from the hue factor this class always has
        return cover.unsqueeze(1) * rgb[idx[:, 5]].view(-1, 3, 1, 1)
