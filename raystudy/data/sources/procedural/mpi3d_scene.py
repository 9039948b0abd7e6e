"""The world of the procedural MPI3D scene (:mod:`raystudy.data.sources.procedural.mpi3d`
says what it shows and how it is drawn): its colours, joint ranges and camera heights, the
arm's and objects' sizes in world units (X right, Y up, Z towards the camera, one image width
per unit; the floor is Y = 0), the orthographic camera's projection and the arm's joints."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

from raystudy.data.sources.procedural.dataset import pixel_span

COLOR_NAMES = ("white", "green", "red", "blue", "brown", "olive")
SHAPE_NAMES = ("cone", "cube", "cylinder", "hexagonal", "pyramid", "sphere")
SIZE_NAMES = ("small", "large")
CAMERA_NAMES = ("top", "center", "bottom")
BACKGROUND_NAMES = ("purple", "sea green", "salmon")

OBJECT_RGB = (
    (0.95, 0.95, 0.93),  # white
    (0.15, 0.62, 0.22),  # green
    (0.86, 0.13, 0.10),  # red
    (0.13, 0.28, 0.86),  # blue
    (0.52, 0.31, 0.15),  # brown
    (0.52, 0.53, 0.12),  # olive
)
BACKGROUND_RGB = (
    (0.42, 0.26, 0.58),  # purple
    (0.17, 0.55, 0.45),  # sea green
    (0.97, 0.57, 0.46),  # salmon
)
FLOOR_DARKEN = 0.55  # the floor is the backdrop's colour, darker

# Joint ranges, degrees (40 equal steps each).
HORIZONTAL_DEG = tuple(np.linspace(-40.0, 40.0, 40).tolist())
VERTICAL_DEG = tuple(np.linspace(50.0, 150.0, 40).tolist())
CAMERA_ELEVATION_DEG = (30.0, 18.0, 6.0)  # top, center, bottom

# World geometry (X right, Y up, Z towards the camera; the floor is Y = 0).
SHOULDER = (0.0, 0.62, -0.25)
LOOK_AT = (0.0, 0.52, 0.13)  # projects to the image centre from every height
WALL_Z = -0.60  # the backdrop meets the floor here
UPPER_LENGTH, UPPER_ANGLE_DEG = 0.26, 60.0
FORE_LENGTH = 0.26
POST_HALF_WIDTH = 0.035
UPPER_RADIUS, FORE_RADIUS, JOINT_RADIUS = 0.022, 0.017, 0.026
POST_GREY, UPPER_GREY, FORE_GREY, JOINT_GREY = 0.16, 0.30, 0.38, 0.50

OBJECT_YAW_DEG = 20.0  # the object's turn at theta = 0 (a cube then shows two faces)
LARGE = 1.45  # large / small
# Small objects (world units): radius (circumradius of a footprint, half side of a cube) and
# height.
CUBE_HALF = 0.056
CYLINDER_RADIUS, CYLINDER_HEIGHT = 0.06, 0.125
SPHERE_RADIUS = 0.068
CONE_RADIUS, CONE_HEIGHT = 0.068, 0.15
HEXAGON_RADIUS, HEXAGON_HEIGHT = 0.07, 0.105
PYRAMID_HALF, PYRAMID_HEIGHT = 0.062, 0.135
# Any object, centred on the tip, lies within this distance of it along either axis (at the
# large size, any camera; heights are at most their world value on screen).
OBJECT_REACH = LARGE * max(
    CUBE_HALF * math.sqrt(2.0) + CUBE_HALF,
    CYLINDER_RADIUS + CYLINDER_HEIGHT / 2,
    SPHERE_RADIUS,
    CONE_RADIUS + CONE_HEIGHT / 2,
    HEXAGON_RADIUS + HEXAGON_HEIGHT / 2,
    PYRAMID_HALF * math.sqrt(2.0) + PYRAMID_HEIGHT / 2,
)
WINDOW_MARGIN = 2  # pixels: the anti-aliasing ramp and the window's rounding


def project(
    x: torch.Tensor, y: torch.Tensor, z: torch.Tensor, sin_e: torch.Tensor, cos_e: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Screen ``(u, v)`` of world points under the orthographic camera at elevation ``e``."""
    u = 0.5 + (x - LOOK_AT[0])
    v = 0.5 - ((y - LOOK_AT[1]) * cos_e - (z - LOOK_AT[2]) * sin_e)
    return u, v


class JointAngles(Protocol):
    """Sines and cosines of the joints' 40 angles each (horizontal ``h``, vertical ``v``)."""

    @property
    def sin_h(self) -> torch.Tensor: ...
    @property
    def cos_h(self) -> torch.Tensor: ...
    @property
    def sin_v(self) -> torch.Tensor: ...
    @property
    def cos_v(self) -> torch.Tensor: ...


@dataclass(frozen=True)
class _Angles:
    sin_h: torch.Tensor
    cos_h: torch.Tensor
    sin_v: torch.Tensor
    cos_v: torch.Tensor


def arm_points(idx: torch.Tensor, t: JointAngles) -> torch.Tensor:
    """World positions ``[B, 3, 3]`` (X, Y, Z) of shoulder, elbow and tip."""
    sin_h, cos_h = t.sin_h[idx[:, 5]], t.cos_h[idx[:, 5]]
    upper_reach = UPPER_LENGTH * math.sin(math.radians(UPPER_ANGLE_DEG))
    upper_drop = UPPER_LENGTH * math.cos(math.radians(UPPER_ANGLE_DEG))
    reach = torch.stack(
        [
            torch.zeros_like(sin_h),
            torch.full_like(sin_h, upper_reach),
            upper_reach + FORE_LENGTH * t.sin_v[idx[:, 6]],
        ],
        dim=1,
    )
    drop = torch.stack(
        [
            torch.zeros_like(sin_h),
            torch.full_like(sin_h, upper_drop),
            upper_drop + FORE_LENGTH * t.cos_v[idx[:, 6]],
        ],
        dim=1,
    )
    x = SHOULDER[0] + reach * sin_h.unsqueeze(1)
    y = SHOULDER[1] - drop
    z = SHOULDER[2] + reach * cos_h.unsqueeze(1)
    return torch.stack([x, y, z], dim=2)


def arm_box(res: int) -> tuple[slice, slice]:
    """Rows and columns that hold every link at every joint setting and camera height."""
    h, v, c = np.meshgrid(np.arange(40), np.arange(40), np.arange(3), indexing="ij")
    idx = torch.zeros((h.size, 7), dtype=torch.int64)
    idx[:, 5], idx[:, 6], idx[:, 3] = (torch.from_numpy(x.ravel()) for x in (h, v, c))
    elevation = torch.deg2rad(torch.tensor(CAMERA_ELEVATION_DEG, dtype=torch.float64))
    horizontal = torch.deg2rad(torch.tensor(HORIZONTAL_DEG, dtype=torch.float64))
    vertical = torch.deg2rad(torch.tensor(VERTICAL_DEG, dtype=torch.float64))
    angles = _Angles(
        torch.sin(horizontal), torch.cos(horizontal), torch.sin(vertical), torch.cos(vertical)
    )
    points = arm_points(idx, angles)
    sin_e, cos_e = torch.sin(elevation)[idx[:, 3]], torch.cos(elevation)[idx[:, 3]]
    u, v = project(
        points[..., 0], points[..., 1], points[..., 2], sin_e.view(-1, 1), cos_e.view(-1, 1)
    )
    reach = max(UPPER_RADIUS, FORE_RADIUS, JOINT_RADIUS)
    rows = pixel_span(float(v.min()) - reach, float(v.max()) + reach, res)
    cols = pixel_span(float(u.min()) - reach, float(u.max()) + reach, res)
    return rows, cols
