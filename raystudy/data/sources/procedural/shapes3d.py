"""Procedural 3dshapes, rendered in torch from factor indices.

3dshapes (Burgess & Kim 2018, https://github.com/deepmind/3d-shapes) is the full grid of six
factors, in this row-major order (the official ``labels`` columns and values):

=============  ====  ==========================================================
floor_hue      10    hue 0.0, 0.1, ..., 0.9 of the floor
wall_hue       10    hue of the back wall
object_hue     10    hue of the object
scale          8     0.75 .. 1.25 (linear), the object's size
shape          4     0 cube, 1 cylinder, 2 sphere, 3 capsule
orientation    15    -30 .. 30 degrees: the camera turns about the object
=============  ====  ==========================================================

The scene (this renderer's own; not pixel-identical to the official images): a back wall above
a floor, one shaded object standing on the floor at the centre, seen from slightly above
(:mod:`raystudy.data.sources.procedural.solids`). Hues are at full saturation and value
(:func:`hue_to_rgb`), and shading multiplies them. Orientation turns the scene: the floor/wall edge
tilts by ``0.35 tan(theta)`` and the cube turns by ``theta`` about the vertical; the cylinder,
sphere
and (upright) capsule are symmetric about it, so for them only the edge moves, as in 3dshapes.
Images are 64x64x3 (``resolution`` changes that), with a ``sim`` and a ``real`` domain.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from raystudy.data.core.factors import Factor
from raystudy.data.core.grids import (
    SHAPES3D_HUES,
    SHAPES3D_ORIENTATIONS_DEG,
    SHAPES3D_SCALES,
    shapes3d_factors,
)
from raystudy.data.core.registry import register_dataset
from raystudy.data.sources.procedural import sdf, solids
from raystudy.data.sources.procedural.colour import hue_to_rgb
from raystudy.data.sources.procedural.dataset import ProceduralDataset, pixel_span, placed

SHAPE_NAMES = ("cube", "cylinder", "sphere", "capsule")

# Screen geometry, in units of the image side (x right, y down).
FLOOR_EDGE = 0.56  # the floor/wall edge's height at the image centre
EDGE_SLOPE = 0.35  # its slope per tan(orientation)
GROUND = (0.5, 0.80)  # where the object stands
TILT = 0.35  # how far down the screen a unit of depth towards the camera goes
# Object sizes at scale 1.
CUBE_HALF = 0.11
CYLINDER_RADIUS, CYLINDER_HEIGHT = 0.11, 0.24
SPHERE_RADIUS = 0.13
CAPSULE_RADIUS, CAPSULE_HEIGHT = 0.085, 0.30


def object_extent(max_scale: float) -> tuple[float, float, float, float]:
    """Screen box ``(left, right, top, bottom)`` that holds any object at ``max_scale``."""
    reach = max(CUBE_HALF * math.sqrt(2.0), CYLINDER_RADIUS, SPHERE_RADIUS, CAPSULE_RADIUS)
    above = max(
        2 * CUBE_HALF + TILT * CUBE_HALF * math.sqrt(2.0),
        CYLINDER_HEIGHT + TILT * CYLINDER_RADIUS,
        2 * SPHERE_RADIUS,
        CAPSULE_HEIGHT,
    )
    below = TILT * max(CUBE_HALF * math.sqrt(2.0), CYLINDER_RADIUS)
    u, v = GROUND
    s = max_scale
    return u - reach * s, u + reach * s, v - above * s, v + below * s


@dataclass(frozen=True)
class _Tables:
    rgb: torch.Tensor  # [10, 3]
    scale: torch.Tensor  # [8]
    yaw: torch.Tensor  # [15] radians
    slope: torch.Tensor  # [15] floor-edge slope
    u: torch.Tensor  # [1, 1, W] pixel centres
    v: torch.Tensor  # [1, H, 1]
    wall_shade: torch.Tensor  # [1, 1, H, 1]
    floor_shade: torch.Tensor  # [1, 1, H, 1]
    rows: slice  # the crop that holds every object
    cols: slice


@register_dataset("shapes3d")
class Shapes3D(ProceduralDataset):
    """A floor, a back wall and one shaded object; 64x64x3.

    Options: ``resolution`` (default 64), ``real_seed`` (the ``real`` domain's seed).
    """

    name = "shapes3d"
    channels = 3
    smallest_resolution = 16

    def _factor_tuple(self) -> tuple[Factor, ...]:
        return shapes3d_factors()

    def _render_sim(self, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        t = self._device_tables(idx.device)
        res = self.resolution
        background = self._background(idx, t)
        # Objects: sorted by shape so each shape is one slice of the batch; undone after.
        order = torch.argsort(idx[:, 4], stable=True)
        distance, shade = self._objects(idx[order], t)
        distance = torch.empty_like(distance).index_copy_(0, order, distance)
        shade = torch.empty_like(shade).index_copy_(0, order, shade)
        cover = sdf.coverage(distance, 1.0 / res).unsqueeze(1)
        colour = t.rgb[idx[:, 2]].view(-1, 3, 1, 1) * shade.unsqueeze(1)
        background[:, :, t.rows, t.cols].lerp_(colour, cover)  # "over", in place
        foreground = self._workspace.get("foreground", (idx.shape[0], 1, res, res), idx.device)
        foreground.zero_()
        foreground[:, :, t.rows, t.cols] = cover
        return background, foreground

    def _background(self, idx: torch.Tensor, t: _Tables) -> torch.Tensor:
        """Wall above, floor below an edge through ``(0.5, FLOOR_EDGE)`` tilted with the
        orientation; anti-aliased along the edge's normal distance."""
        slope = t.slope[idx[:, 5]].view(-1, 1, 1)
        edge = FLOOR_EDGE + slope * (t.u - 0.5)
        to_floor = (edge - t.v) / torch.sqrt(1.0 + slope**2)  # negative below the edge
        floor = sdf.coverage(to_floor, 1.0 / self.resolution).unsqueeze(1)
        # Per-row colours [B, 3, H, 1]: only the blend below is image-sized.
        wall_rgb = t.rgb[idx[:, 1]].view(-1, 3, 1, 1) * t.wall_shade
        floor_rgb = t.rgb[idx[:, 0]].view(-1, 3, 1, 1) * t.floor_shade
        return torch.addcmul(wall_rgb, floor, floor_rgb - wall_rgb)

    def _objects(self, idx: torch.Tensor, t: _Tables) -> tuple[torch.Tensor, torch.Tensor]:
        """Signed distance and shade ``[B, h, w]`` of each object in the crop; ``idx``
        sorted by shape."""
        u, v = t.u[..., t.cols], t.v[:, t.rows]
        s = t.scale[idx[:, 3]].view(-1, 1, 1)
        yaw = t.yaw[idx[:, 5]].view(-1, 1, 1)
        u0 = torch.full_like(s, GROUND[0])
        v0 = torch.full_like(s, GROUND[1])
        pixel = 1.0 / self.resolution
        counts = torch.bincount(idx[:, 4], minlength=len(SHAPE_NAMES)).tolist()
        pieces = []
        start = 0
        for shape, count in enumerate(counts):
            if not count:
                continue
            part = slice(start, start + count)
            su, sv, ss = u0[part], v0[part], s[part]
            if shape == 0:
                out = solids.box(
                    u, v, su, sv, CUBE_HALF * ss, 2 * CUBE_HALF * ss, yaw[part], TILT, pixel
                )
            elif shape == 1:
                out = solids.cylinder(
                    u, v, su, sv, CYLINDER_RADIUS * ss, CYLINDER_HEIGHT * ss, TILT, pixel
                )
            elif shape == 2:
                out = solids.sphere(u, v, su, sv, SPHERE_RADIUS * ss)
            else:
                out = solids.capsule(u, v, su, sv, CAPSULE_RADIUS * ss, CAPSULE_HEIGHT * ss)
            pieces.append(tuple(x.expand(count, v.shape[1], u.shape[2]) for x in out))
            start += count
        return torch.cat([p[0] for p in pieces]), torch.cat([p[1] for p in pieces])

    def _build_tables(self, device: torch.device) -> _Tables:
        res = self.resolution
        centres = (torch.arange(res, dtype=torch.float64) + 0.5) / res
        theta = torch.deg2rad(torch.tensor(SHAPES3D_ORIENTATIONS_DEG, dtype=torch.float64))
        # Light falls from above: the wall brightens towards the floor, the floor towards us.
        wall_shade = 0.72 + 0.28 * (centres / FLOOR_EDGE).clamp(max=1.0)
        floor_shade = 0.62 + 0.38 * ((centres - 0.4) / 0.6).clamp(0.0, 1.0)
        left, right, top, bottom = object_extent(max(SHAPES3D_SCALES))
        tables = _Tables(
            rgb=hue_to_rgb(torch.tensor(SHAPES3D_HUES, dtype=torch.float64)),
            scale=torch.tensor(SHAPES3D_SCALES, dtype=torch.float64),
            yaw=theta,
            slope=EDGE_SLOPE * torch.tan(theta),
            u=centres.view(1, 1, res),
            v=centres.view(1, res, 1),
            wall_shade=wall_shade.view(1, 1, res, 1),
            floor_shade=floor_shade.view(1, 1, res, 1),
            rows=pixel_span(top, bottom, res),
            cols=pixel_span(left, right, res),
        )
        return placed(tables, device)
