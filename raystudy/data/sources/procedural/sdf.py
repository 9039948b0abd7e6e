"""Two-dimensional signed-distance functions (negative inside) and their anti-aliased coverage.

Shapes are drawn as ``coverage(sdf(p))`` on a pixel-centre grid, the standard way of rendering
implicit shapes (Hart 1996, "Sphere tracing"; Frisken et al. 2000, "Adaptively sampled distance
fields"): the distance to the edge tells how much of a pixel the shape covers, so a sub-pixel
move of the shape changes the image continuously instead of flipping whole pixels.
All functions are elementwise over broadcastable float tensors; :func:`segment_distance`,
:func:`round_coverage_` and :func:`paint_layer` (the capsule links of the robot scenes) work
in place, in scratch buffers the caller owns (:mod:`raystudy.data.core.workspace`).
"""

from __future__ import annotations

import math

import torch

_SQRT_HALF = math.sqrt(0.5)


def box(x: torch.Tensor, y: torch.Tensor, half_w: float, half_h: float) -> torch.Tensor:
    """Exact distance to an axis-aligned rectangle centred at the origin."""
    qx = x.abs() - half_w
    qy = y.abs() - half_h
    outside = torch.hypot(qx.clamp(min=0.0), qy.clamp(min=0.0))
    inside = torch.maximum(qx, qy).clamp(max=0.0)
    return outside + inside


def ellipse(x: torch.Tensor, y: torch.Tensor, a: float, b: float) -> torch.Tensor:
    """Distance to the ellipse with semi-axes ``a`` (x) and ``b`` (y), to first order.

    The implicit function f = |p / r| - 1 divided by its gradient norm |grad f| =
    |p / r^2| / |p / r| gives f / |grad f| = |p/r| (|p/r| - 1) / |p/r^2|, exact on the boundary
    and accurate within a pixel of it, which is all anti-aliasing needs. The tiny epsilon keeps
    the centre (0/0) finite and deep inside (about -1) instead of NaN.
    """
    eps = 1e-12
    k0 = torch.sqrt((x / a) ** 2 + (y / b) ** 2 + eps)
    k1 = torch.sqrt((x / (a * a)) ** 2 + (y / (b * b)) ** 2 + eps)
    return k0 * (k0 - 1.0) / k1


def heart(x: torch.Tensor, y: torch.Tensor, h: float) -> torch.Tensor:
    """A heart with its tip pointing towards +y: the classic construction of a square standing
    on a corner (half-diagonal ``h``) with a disc on each of its two upper edges.

    The union of shapes is the minimum of their distances; that is exact outside and a
    1-Lipschitz bound inside, so coverage near the edge is right. The shape is shifted so that
    its bounding box is centred on the origin (it spans 2.41 h wide and 2.21 h tall).
    """
    y = y - 0.1036 * h  # centre the bounding box: tip at +h, disc tops at -(1/2 + 1/sqrt2) h
    # The diamond |x| + |y| <= h is a square of half-side h / sqrt2 rotated by 45 degrees.
    diamond = box((x + y) * _SQRT_HALF, (y - x) * _SQRT_HALF, h * _SQRT_HALF, h * _SQRT_HALF)
    # Its upper edges have midpoints (+-h/2, -h/2) and length h*sqrt2: discs of radius h/sqrt2.
    # |x| folds the two discs into one because the heart is mirror-symmetric.
    lobes = torch.hypot(x.abs() - 0.5 * h, y + 0.5 * h) - h * _SQRT_HALF
    return torch.minimum(diamond, lobes)


def coverage(distance: torch.Tensor, pixel: float) -> torch.Tensor:
    """Fraction of a pixel of width ``pixel`` covered by the shape, for a locally straight edge:
    a linear ramp of the signed distance over one pixel (box-filter anti-aliasing)."""
    return (0.5 - distance / pixel).clamp_(0.0, 1.0)


def segment_distance(
    u: torch.Tensor,
    v: torch.Tensor,
    au: torch.Tensor,
    av: torch.Tensor,
    bu: torch.Tensor,
    bv: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
) -> torch.Tensor:
    """Distance ``[B, H, W]`` from pixel centres to the segment a-b, written into scratch
    ``b`` (``a`` is scratch too): the nearest point is at ``h = clamp(<p - a, b - a> /
    |b - a|^2, 0, 1)`` (Quilez's segment SDF). Per-axis terms are ``[B, 1, W]`` or
    ``[B, H, 1]``; each full-size step writes into ``a`` or ``b``."""
    eu, ev = bu - au, bv - av
    inv = 1.0 / (eu * eu + ev * ev)
    pu, pv = u - au, v - av
    h = torch.add(pu * (eu * inv), pv * (ev * inv), out=a).clamp_(0.0, 1.0)
    du = torch.addcmul(pu, h, eu, value=-1.0, out=b)
    dv = torch.addcmul(pv, h, ev, value=-1.0, out=a)  # h is no longer needed
    return du.mul_(du).addcmul_(dv, dv).sqrt_()


def round_coverage_(distance: torch.Tensor, radius: float, inv_pixel: float) -> torch.Tensor:
    """:func:`coverage` of a round part of ``radius``, in place."""
    return distance.mul_(-inv_pixel).add_(0.5 + radius * inv_pixel).clamp_(0.0, 1.0)


def paint_layer(cover: torch.Tensor, grey: torch.Tensor, layer: torch.Tensor, value: float) -> None:
    """Paint a grey layer of coverage ``layer`` over ``(cover, grey)``, in place:
    ``grey += layer (value - grey)`` is a linear interpolation towards ``value``."""
    grey.lerp_(torch.tensor(value, dtype=grey.dtype, device=grey.device), layer)
    torch.maximum(cover, layer, out=cover)
