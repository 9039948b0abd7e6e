"""A planar robot finger over a cube, after the TriFinger scenes of Dittadi et al. (2021, "On
the Transfer of Disentangled Representations in Realistic Settings").

Factors, in this row-major order:

=============  ====  ==========================================================
upper_joint    30    -50 .. 50 degrees: the first link's angle from straight down
middle_joint   30    -80 .. 80 degrees: the second link relative to the first
lower_joint    30    -80 .. 80 degrees: the third link relative to the second
cube_x         30    -0.30 .. 0.30: the cube's lateral position (image widths)
cube_y         30    0.00 .. 0.30: its depth behind the finger's plane
cube_rotation  10    0, 9, ..., 81 degrees about the vertical (a cube repeats every 90)
hue            12    the cube's hue, k / 12 (full saturation and value)
=============  ====  ==========================================================

The world (units of the image side): the finger hangs from a mount at the top centre and moves
in the vertical plane at depth 0, which meets the floor at screen row ``FLOOR_ROW``; joint
``k`` is at ``(X_k, Y_k) = sum_{j<k} L_j (sin a_j, -cos a_j)`` below the base, with absolute
link angles ``a_j = phi_1 + ... + phi_j``. The cube (side ``2 CUBE_HALF``) stands on the floor at
``(cube_x, -cube_y)`` and is drawn in the oblique view of
:mod:`raystudy.data.sources.procedural.solids`. The finger is drawn over the cube (the camera is on
the finger's side), so links occlude it.

Feasibility (:meth:`Finger.feasible`): a state is infeasible when the fingertip (a ball of
radius ``TIP_RADIUS``) would be inside the floor (``Y_tip < TIP_RADIUS`` above it) or inside
the cube (its centre within ``TIP_RADIUS`` of the cube's volume, measured as the max of the
footprint's and the height's signed distances). Splits sample only feasible states.

Images are 64x64x3 or 128x128x3 (``resolution``), in the domains ``sim`` and ``real``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from raystudy.data.core.factors import Factor
from raystudy.data.core.registry import register_dataset
from raystudy.data.sources.procedural import sdf, solids
from raystudy.data.sources.procedural.colour import hue_to_rgb
from raystudy.data.sources.procedural.dataset import ProceduralDataset, pixel_span, placed

NUM_HUES = 12
LINKS = (0.26, 0.24, 0.22)  # upper, middle, lower link lengths
BASE = (0.5, 0.08)  # screen position of the upper joint
FLOOR_ROW = 0.80  # screen row where the finger's plane meets the floor
FLOOR_BACK = 0.45  # screen row of the floor's far edge (the wall above it)
BASE_HEIGHT = FLOOR_ROW - BASE[1]  # the upper joint's height above the floor
TILT = 0.35
CUBE_HALF = 0.08
CUBE_HEIGHT = 2 * CUBE_HALF
TIP_RADIUS = 0.03
LINK_RADIUS = 0.022
MOUNT_HALF_WIDTH = 0.06
# Greys of the finger's parts (it is one grey layer: cheap, and never confused with a hue).
LINK_GREYS = (0.58, 0.68, 0.78)
TIP_GREY = 0.93
MOUNT_GREY = 0.22
WALL_RGB = (0.32, 0.34, 0.40)
FLOOR_RGB = (0.62, 0.60, 0.55)


def finger_factors() -> tuple[Factor, ...]:
    def lin(lo: float, hi: float, n: int) -> tuple[float, ...]:
        return tuple(np.linspace(lo, hi, n).tolist())

    return (
        Factor("upper_joint", 30, lin(-50.0, 50.0, 30)),
        Factor("middle_joint", 30, lin(-80.0, 80.0, 30)),
        Factor("lower_joint", 30, lin(-80.0, 80.0, 30)),
        Factor("cube_x", 30, lin(-0.3, 0.3, 30)),
        Factor("cube_y", 30, lin(0.0, 0.3, 30)),
        Factor("cube_rotation", 10, tuple(float(9 * k) for k in range(10))),
        Factor("hue", NUM_HUES, tuple(k / NUM_HUES for k in range(NUM_HUES))),
    )


@dataclass(frozen=True)
class _Tables:
    angles: torch.Tensor  # [3, 30] joint angles, radians
    cube_x: torch.Tensor
    cube_y: torch.Tensor
    yaw: torch.Tensor
    rgb: torch.Tensor  # [12, 3]
    u: torch.Tensor  # [1, 1, W]
    v: torch.Tensor  # [1, H, 1]
    background: torch.Tensor  # [1, 3, H, W]
    mount: torch.Tensor  # [1, H, W] coverage of the mount
    cube_rows: slice  # every cube lies in these rows


def joint_positions(idx: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """World positions ``[B, 4, 2]`` (X, height above the floor) of the upper, middle and
    lower joints and the fingertip."""
    absolute = torch.cumsum(torch.stack([angles[k][idx[:, k]] for k in range(3)], dim=1), dim=1)
    lengths = torch.tensor(LINKS, dtype=absolute.dtype, device=idx.device)
    steps = torch.stack([torch.sin(absolute), -torch.cos(absolute)], dim=2) * lengths.view(1, 3, 1)
    base = torch.tensor([0.0, BASE_HEIGHT], dtype=absolute.dtype, device=idx.device)
    points = torch.cumsum(torch.cat([base.expand(idx.shape[0], 1, 2), steps], dim=1), dim=1)
    return points


@register_dataset("finger")
class Finger(ProceduralDataset):
    """A three-link robot finger over a coloured cube (after TriFinger); 64 or 128 px.

    Options: ``resolution`` (64 or 128; default 64), ``real_seed``.
    """

    name = "finger"
    channels = 3

    def __init__(self, resolution: int = 64, real_seed: int = 0) -> None:
        if resolution not in (64, 128):
            raise ValueError(f"finger renders at resolution 64 or 128, got {resolution}")
        super().__init__(resolution, real_seed)

    def _factor_tuple(self) -> tuple[Factor, ...]:
        return finger_factors()

    # --- feasibility ---------------------------------------------------------------------

    def feasible(self, indices: torch.Tensor | np.ndarray) -> torch.Tensor:
        """False where the fingertip is inside the floor or the cube (module docstring)."""
        idx = self.as_index_tensor(indices)
        t = self._device_tables(idx.device)
        tip = joint_positions(idx, t.angles)[:, 3]
        return tip_clearance(tip, idx, t) >= TIP_RADIUS

    # --- rendering -----------------------------------------------------------------------

    def _render_sim(self, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        t = self._device_tables(idx.device)
        batch = idx.shape[0]
        pixel = 1.0 / self.resolution
        image = t.background.expand(batch, -1, -1, -1).clone()
        # The cube, only in the rows any cube can reach; "over" is a lerp towards its colour.
        rows = t.cube_rows
        u0 = (0.5 + t.cube_x[idx[:, 3]]).view(-1, 1, 1)
        v0 = (FLOOR_ROW - TILT * t.cube_y[idx[:, 4]]).view(-1, 1, 1)
        half = torch.full_like(u0, CUBE_HALF)
        yaw = t.yaw[idx[:, 5]].view(-1, 1, 1)
        distance, shade = solids.box(t.u, t.v[:, rows], u0, v0, half, 2 * half, yaw, TILT, pixel)
        cube = sdf.coverage(distance, pixel).unsqueeze(1)
        colour = t.rgb[idx[:, 6]].view(-1, 3, 1, 1) * shade.unsqueeze(1)
        image[:, :, rows].lerp_(colour, cube)
        # The finger on top: one grey layer, parts painted back to front.
        finger, grey = self._finger_layer(idx, t)
        image.lerp_(grey.expand_as(image), finger)
        foreground = finger  # scratch: the caller may overwrite it
        foreground[:, :, rows] = torch.maximum(foreground[:, :, rows], cube)
        return image, foreground

    def _finger_layer(self, idx: torch.Tensor, t: _Tables) -> tuple[torch.Tensor, torch.Tensor]:
        """Coverage and grey level ``[B, 1, H, W]`` of mount, links (capsules, whose round
        ends are the joints) and fingertip, painted back to front, in scratch buffers.

        Painting a layer of coverage ``c`` and grey ``g`` is ``grey += c (g - grey)`` and
        ``cover = max(cover, c)``; this is the "over" operator wherever a layer is opaque, and
        differs from it only in the one-pixel ramp where two edges cross. Every step writes
        into reused buffers: the finger is the costliest part of the scene, and fresh
        image-sized memory costs page faults on every call (:mod:`raystudy.data.core.workspace`).
        """
        points = joint_positions(idx, t.angles)
        su = (0.5 + points[..., 0]).view(-1, 4, 1, 1)
        sv = (FLOOR_ROW - points[..., 1]).view(-1, 4, 1, 1)
        inv_pixel = float(self.resolution)
        shape = (idx.shape[0], self.resolution, self.resolution)
        cover = self._workspace.get("cover", shape, idx.device)
        grey = self._workspace.get("grey", shape, idx.device)
        a = self._workspace.get("a", shape, idx.device)
        b = self._workspace.get("b", shape, idx.device)
        cover.copy_(t.mount.expand(shape))
        grey.fill_(MOUNT_GREY)
        for k, link_grey in enumerate(LINK_GREYS):
            d = sdf.segment_distance(t.u, t.v, su[:, k], sv[:, k], su[:, k + 1], sv[:, k + 1], a, b)
            sdf.paint_layer(cover, grey, sdf.round_coverage_(d, LINK_RADIUS, inv_pixel), link_grey)
        du, dv = t.u - su[:, 3], t.v - sv[:, 3]
        d = torch.add(du * du, dv * dv, out=a).sqrt_()
        sdf.paint_layer(cover, grey, sdf.round_coverage_(d, TIP_RADIUS, inv_pixel), TIP_GREY)
        return cover.unsqueeze(1), grey.unsqueeze(1)

    def _build_tables(self, device: torch.device) -> _Tables:
        res = self.resolution
        space = self.factors

        def values(name: str) -> torch.Tensor:
            return torch.tensor(space.factors[space.index(name)].values, dtype=torch.float64)

        angles = torch.deg2rad(
            torch.stack([values(n) for n in ("upper_joint", "middle_joint", "lower_joint")])
        )
        centres = (torch.arange(res, dtype=torch.float64) + 0.5) / res
        u, v = centres.view(1, 1, res), centres.view(1, res, 1)
        pixel = 1.0 / res
        # Wall above the floor's far edge; the floor brightens towards the camera.
        floor = sdf.coverage(FLOOR_BACK - v, pixel).expand(1, res, res)
        wall = torch.tensor(WALL_RGB, dtype=torch.float64).view(1, 3, 1, 1) * (0.8 + 0.2 * v)
        ground = torch.tensor(FLOOR_RGB, dtype=torch.float64).view(1, 3, 1, 1) * (0.7 + 0.4 * v)
        background = wall + floor.unsqueeze(1) * (ground - wall)
        mount = sdf.coverage(sdf.box(u - BASE[0], v, MOUNT_HALF_WIDTH, BASE[1]), pixel)
        # Cube rows: from the top of the farthest cube to the bottom of the nearest one.
        reach = CUBE_HALF * math.sqrt(2.0)
        top = FLOOR_ROW - TILT * float(values("cube_y").max()) - CUBE_HEIGHT - TILT * reach
        bottom = FLOOR_ROW + TILT * reach

        tables = _Tables(
            angles=angles,
            cube_x=values("cube_x"),
            cube_y=values("cube_y"),
            yaw=torch.deg2rad(values("cube_rotation")),
            rgb=hue_to_rgb(values("hue")),
            u=u,
            v=v,
            background=background.expand(1, 3, res, res).contiguous(),
            mount=mount.expand(1, res, res).contiguous(),
            cube_rows=pixel_span(top, bottom, res),
        )
        return placed(tables, device)


def tip_clearance(tip: torch.Tensor, idx: torch.Tensor, t: _Tables) -> torch.Tensor:
    """Signed distance ``[B]`` from the fingertip's centre to the nearest obstacle (floor or
    cube volume); the tip fits where it is at least ``TIP_RADIUS``."""
    x, height = tip[:, 0], tip[:, 1]
    # Into the cube's frame: its footprint is centred at (cube_x, -cube_y), turned by yaw.
    dx = x - t.cube_x[idx[:, 3]]
    dd = t.cube_y[idx[:, 4]]  # the tip is at depth 0, the cube's centre at -cube_y
    yaw = t.yaw[idx[:, 5]]
    cos, sin = torch.cos(yaw), torch.sin(yaw)
    fx, fd = cos * dx + sin * dd, -sin * dx + cos * dd
    footprint = sdf.box(fx, fd, CUBE_HALF, CUBE_HALF)
    # Exact distance to the box: outside parts combine like sdf.box's, in 2-D (footprint,
    # height) with the footprint distance as one axis.
    above = height - CUBE_HEIGHT
    cube = torch.hypot(footprint.clamp(min=0.0), above.clamp(min=0.0)) + torch.maximum(
        footprint, above
    ).clamp(max=0.0)
    return torch.minimum(height, cube)
