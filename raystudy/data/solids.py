"""Shaded solids standing on a floor, seen from slightly above: box, cylinder, sphere, capsule.

The view is an oblique ("cabinet"-like) parallel projection: world X goes right on screen,
height Y goes up, and depth D (towards the camera) goes down the screen by ``tilt * D``. So a
floor point ``(X, D)`` sits at screen ``(u0 + X, v0 + tilt * D)`` and a point at height ``Y``
``Y`` higher (``v`` grows downwards, as image rows do). Solids are signed distances in screen
units (negative inside), made into anti-aliased coverage with :func:`raystudy.data.sdf.coverage`.

Shading is Lambertian with an ambient term: ``shade = AMBIENT + DIFFUSE * max(0, n . l)`` for a
surface normal ``n`` and one fixed light direction ``l`` (Lambert 1760; Phong 1975 for the
ambient + diffuse split). Every function takes per-image parameters shaped ``[B, 1, 1]`` and
pixel centres ``u`` ``[1, 1, W]`` and ``v`` ``[1, H, 1]``, and returns ``(distance, shade)``,
each ``[B, H, W]``; ``pixel`` is the width of one pixel in screen units (the anti-aliasing
ramp between a top face and the sides).
"""

from __future__ import annotations

import math

import torch

from raystudy.data import sdf

AMBIENT = 0.35
DIFFUSE = 0.65
# Light from the upper left, in front of the scene: (X right, Y up, D towards the camera).
_L = (-0.45, 0.75, 0.5)
_NORM = math.sqrt(sum(c * c for c in _L))
LIGHT = tuple(c / _NORM for c in _L)
TOP_SHADE = AMBIENT + DIFFUSE * max(0.0, LIGHT[1])  # an upward face

Pair = tuple[torch.Tensor, torch.Tensor]


def lambert(nx: torch.Tensor, ny: torch.Tensor, nd: torch.Tensor) -> torch.Tensor:
    """``AMBIENT + DIFFUSE * max(0, n . LIGHT)`` for unit normals given by their components."""
    dot = nx * LIGHT[0] + ny * LIGHT[1] + nd * LIGHT[2]
    return AMBIENT + DIFFUSE * dot.clamp(min=0.0)


def box(
    u: torch.Tensor,
    v: torch.Tensor,
    u0: torch.Tensor,
    v0: torch.Tensor,
    half: torch.Tensor,
    height: torch.Tensor,
    yaw: torch.Tensor,
    tilt: float,
    pixel: float,
) -> Pair:
    """A box with a square ``2 half`` footprint turned by ``yaw`` about the vertical, of
    ``height``, whose bottom face is centred on screen point ``(u0, v0)``.

    Its screen image is the top face (a parallelogram, the footprint under the projection)
    swept down by ``height``: a Minkowski sum, whose support function is the sum of the two.
    So the body is the intersection of the top face's four half-planes, each pushed out by
    ``max(0, n_v) * height`` for an edge normal ``n``, and the two vertical half-planes at
    the extreme corners. The max over half-plane distances is the exact distance inside and a
    lower bound outside, which is what coverage needs at an edge.

    Shading: the top face takes :data:`TOP_SHADE`; a side pixel belongs to the visible
    vertical face (outward normal towards the camera) whose corners span its column.
    """
    cos, sin = torch.cos(yaw), torch.sin(yaw)
    signs = ((1.0, 1.0), (-1.0, 1.0), (-1.0, -1.0), (1.0, -1.0))  # counter-clockwise in (X, D)
    corners = []
    for sx, sd in signs:
        x = half * (sx * cos - sd * sin)
        d = half * (sx * sin + sd * cos)
        corners.append((u0 + x, v0 - height + tilt * d, x, d))
    body_terms = []
    top_terms = []
    side_shade = torch.zeros_like(u0 * u * v)
    for k in range(4):
        ua, va, xa, da = corners[k]
        ub, vb, xb, db = corners[(k + 1) % 4]
        # Outward normal of edge a->b in screen space; the centre lies on its inner side.
        nu, nv = vb - va, ua - ub
        length = torch.hypot(nu, nv)
        nu, nv = nu / length, nv / length
        centre_side = nu * (u0 - ua) + nv * (v0 - height - va)
        flip = torch.where(centre_side > 0, -1.0, 1.0)
        nu, nv = nu * flip, nv * flip
        dist_top = nu * (u - ua) + nv * (v - va)
        top_terms.append(dist_top)
        body_terms.append(dist_top - nv.clamp(min=0.0) * height)
        # The vertical face under edge a->b: its outward normal in (X, D) is the footprint's.
        fx, fd = (db - da), -(xb - xa)
        flen = torch.hypot(fx, fd)
        fx, fd = fx / flen, fd / flen
        out = torch.where(fx * (xa + xb) + fd * (da + db) < 0, -1.0, 1.0)
        fx, fd = fx * out, fd * out
        visible = fd > 1e-6
        lo, hi = torch.minimum(ua, ub), torch.maximum(ua, ub)
        on_face = visible & (u >= lo) & (u < hi)
        side_shade = torch.where(on_face, lambert(fx, torch.zeros_like(fx), fd), side_shade)
    us = torch.stack([c[0] for c in corners])
    body_terms.append(us.amin(dim=0) - u)
    body_terms.append(u - us.amax(dim=0))
    body = torch.stack(torch.broadcast_tensors(*body_terms)).amax(dim=0)
    top = torch.stack(torch.broadcast_tensors(*top_terms)).amax(dim=0)
    # Blend the top and side shades over the top edge's one-pixel ramp (no hard seam).
    on_top = sdf.coverage(top, pixel)
    return body, on_top * TOP_SHADE + (1.0 - on_top) * side_shade


def cylinder(
    u: torch.Tensor,
    v: torch.Tensor,
    u0: torch.Tensor,
    v0: torch.Tensor,
    radius: torch.Tensor,
    height: torch.Tensor,
    tilt: float,
    pixel: float,
) -> Pair:
    """An upright cylinder: its floor and top discs project to ellipses of semi-axes
    ``(radius, tilt * radius)``; the body is the bottom ellipse swept up by ``height``, whose
    distance is the ellipse's at the nearest point of the sweep (exact beside the body, the
    caps' distance above and below it). Side normal ``(x / r, 0, sqrt(1 - (x / r)^2))``."""
    du = u - u0
    top_v = v0 - height
    dv = v - torch.maximum(torch.minimum(v, v0), top_v)
    body = sdf.ellipse(du, dv, radius, tilt * radius)
    top = sdf.ellipse(du, v - top_v, radius, tilt * radius)
    nx = (du / radius).clamp(-1.0, 1.0)
    side = lambert(nx, torch.zeros_like(nx), torch.sqrt(1.0 - nx**2))
    on_top = sdf.coverage(top, pixel)
    return body, on_top * TOP_SHADE + (1.0 - on_top) * side


def sphere(
    u: torch.Tensor, v: torch.Tensor, u0: torch.Tensor, v0: torch.Tensor, radius: torch.Tensor
) -> Pair:
    """A ball resting on the floor at ``(u0, v0)`` (its centre ``radius`` above); the normal
    at a disc point is ``(x, y, sqrt(1 - x^2 - y^2))`` in radius units."""
    du = (u - u0) / radius
    dv = (v - (v0 - radius)) / radius
    distance = (torch.hypot(du, dv) - 1.0) * radius
    nd = (1.0 - du**2 - dv**2).clamp(min=0.0).sqrt()
    return distance, lambert(du.clamp(-1, 1), (-dv).clamp(-1, 1), nd)


def capsule(
    u: torch.Tensor,
    v: torch.Tensor,
    u0: torch.Tensor,
    v0: torch.Tensor,
    radius: torch.Tensor,
    height: torch.Tensor,
) -> Pair:
    """An upright capsule (a cylinder with hemispherical ends) of total ``height`` standing
    at ``(u0, v0)``: distance to its axis segment minus the radius; the normal is the
    direction from the nearest axis point, tilted towards the camera as on a sphere."""
    lower = v0 - radius
    upper = v0 - height + radius
    du = (u - u0) / radius
    dv = (v - torch.maximum(torch.minimum(v, lower), upper)) / radius
    distance = (torch.hypot(du, dv) - 1.0) * radius
    nd = (1.0 - du**2 - dv**2).clamp(min=0.0).sqrt()
    return distance, lambert(du.clamp(-1, 1), (-dv).clamp(-1, 1), nd)
