"""Shaded solids standing on a floor, seen from slightly above: box, cylinder, sphere, capsule.

The view is an oblique ("cabinet"-like) parallel projection: world X goes right on screen,
height Y goes up, and depth D (towards the camera) goes down the screen by ``tilt * D``. So a
floor point ``(X, D)`` sits at screen ``(u0 + X, v0 + tilt * D)`` and a point at height ``Y``
``Y`` higher (``v`` grows downwards, as image rows do). Solids are signed distances in screen
units (negative inside), made into anti-aliased coverage with
:func:`raystudy.data.sources.procedural.sdf.coverage`.

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

from raystudy.data.sources.procedural import sdf

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


def _with_top(body: torch.Tensor, top: torch.Tensor, side: torch.Tensor, pixel: float) -> Pair:
    """``(body, shade)`` of an upright solid: :data:`TOP_SHADE` on its top face (``top``, the
    face's distance) and ``side`` below, blended over the top edge's one-pixel ramp (no hard
    seam)."""
    on_top = sdf.coverage(top, pixel)
    return body, on_top * TOP_SHADE + (1.0 - on_top) * side


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
    return _with_top(body, top, side_shade, pixel)


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
    return _with_top(body, top, side, pixel)


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


def _corners(
    yaw: torch.Tensor, radius: torch.Tensor, sides: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Footprint corners ``(X, D)``, each ``[B, sides, 1]``, of a regular ``sides``-gon of
    circumradius ``radius`` turned by ``yaw`` (``[B, 1, 1]``), counter-clockwise; at yaw 0 an
    edge faces the camera (+D)."""
    k = torch.arange(sides, dtype=yaw.dtype, device=yaw.device)
    angle = yaw + (math.pi / sides + 2.0 * math.pi / sides * k).view(1, sides, 1)
    return radius * torch.cos(angle), radius * torch.sin(angle)


def _planes(
    u: torch.Tensor,
    v: torch.Tensor,
    nu: torch.Tensor,
    nv: torch.Tensor,
    pu: torch.Tensor,
    pv: torch.Tensor,
    offset: torch.Tensor | None = None,
) -> torch.Tensor:
    """``nu (u - pu) + nv (v - pv) + offset`` for ``K`` lines at once: line parameters
    ``[B, K, 1]``, pixel centres ``u`` ``[., 1, W]`` and ``v`` ``[., H, 1]``; ``[B, K, H, W]``
    from one image-sized addition (the products are per row or per column)."""
    across = nu.unsqueeze(-1) * (u.unsqueeze(1) - pu.unsqueeze(-1))
    if offset is not None:
        across = across + offset.unsqueeze(-1)
    return across + nv.unsqueeze(-1) * (v.unsqueeze(1) - pv.unsqueeze(-1))


def prism(
    u: torch.Tensor,
    v: torch.Tensor,
    u0: torch.Tensor,
    v0: torch.Tensor,
    radius: torch.Tensor,
    height: torch.Tensor,
    yaw: torch.Tensor,
    tilt: float | torch.Tensor,
    pixel: float,
    sides: int,
) -> Pair:
    """An upright prism on a regular ``sides``-gon of circumradius ``radius``, turned by
    ``yaw`` (at 0 a face looks at the camera), of ``height``, its bottom face centred on
    ``(u0, v0)``: :func:`box` for any regular footprint (a box is ``sides=4`` with ``radius =
    half sqrt 2``), computed for all sides at once. ``tilt`` may be per image (``[B, 1, 1]``).

    As in :func:`box`, the body is the top face swept down by ``height``: each top edge's
    half-plane pushed out by ``max(0, n_v) height``, and two vertical lines at the extreme
    corners. Visible side faces (outward normal towards the camera) cover disjoint column
    ranges, so a column's side shade is the sum over faces of ``shade * [column in face]``.
    """
    x, d = _corners(yaw, radius, sides)  # [B, S, 1]
    ua, va = u0 + x, v0 - height + tilt * d  # top corners on screen
    ub, vb = ua.roll(-1, dims=1), va.roll(-1, dims=1)
    nu, nv = vb - va, ua - ub
    length = torch.hypot(nu, nv)
    # Outward: away from the top face's centre (u0, v0 - height).
    flip = torch.where(nu * (u0 - ua) + nv * (v0 - height - va) > 0, -length, length)
    nu, nv = nu / flip, nv / flip
    top_planes = _planes(u, v, nu, nv, ua, va)  # [B, S, H, W]
    top = top_planes.amax(dim=1)
    push = (nv.clamp(min=0.0) * height).unsqueeze(-1)
    body = (top_planes - push).amax(dim=1)
    body = torch.maximum(body, ua.amin(dim=1, keepdim=True) - u)
    body = torch.maximum(body, u - ua.amax(dim=1, keepdim=True))
    # The vertical face under edge a->b faces outward along its midpoint's direction.
    fx, fd = x + x.roll(-1, dims=1), d + d.roll(-1, dims=1)
    flen = torch.hypot(fx, fd)
    fx, fd = fx / flen, fd / flen
    face_shade = torch.where(fd > 1e-6, lambert(fx, torch.zeros_like(fx), fd), 0.0)
    lo, hi = torch.minimum(ua, ub), torch.maximum(ua, ub)
    columns = u.unsqueeze(1)  # [., 1, 1, W]
    on_face = (columns >= lo.unsqueeze(-1)) & (columns < hi.unsqueeze(-1))
    side_shade = (on_face * face_shade.unsqueeze(-1)).sum(dim=1)  # [B, 1, W]
    return _with_top(body, top, side_shade, pixel)


def convex_hull_distance(
    u: torch.Tensor,
    v: torch.Tensor,
    pu: torch.Tensor,
    pv: torch.Tensor,
    pairs: list[tuple[int, int]] | None = None,
    exact: bool = True,
) -> torch.Tensor:
    """Signed distance ``[B, H, W]`` to the convex hull of ``K`` screen points ``(pu, pv)``
    (each ``[B, K, 1]``), whichever of them are its corners.

    A pair of points spans a hull edge when every other point lies on one side of its line
    (``pairs`` limits the candidates, default all). Inside, the distance is the largest of the
    hull edges' half-plane distances (exact). Outside it is, with ``exact``, the smallest
    distance to a hull edge as a segment, so a sharp corner grows no anti-aliasing spike along
    its edges' lines; without, the half-planes' lower bound (cheaper; fine at blunt corners).
    """
    k = pu.shape[1]
    if pairs is None:
        pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    first = torch.tensor([i for i, _ in pairs], device=pu.device)
    second = torch.tensor([j for _, j in pairs], device=pu.device)
    au, av = pu[:, first], pv[:, first]  # [B, P, 1]
    eu, ev = pu[:, second] - au, pv[:, second] - av
    length2 = (eu * eu + ev * ev).clamp(min=1e-18)
    length = torch.sqrt(length2)
    nu, nv = ev / length, -eu / length
    # Every other point's side of every candidate line ([B, P, K]); the pair's own two are
    # set on it (rounding would put one a hair off it).
    sides = nu * (pu.transpose(1, 2) - au) + nv * (pv.transpose(1, 2) - av)
    own = torch.zeros((len(pairs), k), dtype=torch.bool, device=pu.device)
    own[torch.arange(len(pairs), device=pu.device), first] = True
    own[torch.arange(len(pairs), device=pu.device), second] = True
    sides = sides.masked_fill(own, 0.0)
    left = (sides <= 1e-9).all(dim=2, keepdim=True)
    edge = left | (sides >= -1e-9).all(dim=2, keepdim=True)
    sign = torch.where(left, 1.0, -1.0)
    # Not an edge: pushed far inside (never the largest) and far away (never the nearest).
    far = torch.where(edge, 0.0, 1e6)
    inside = _planes(u, v, sign * nu, sign * nv, au, av, -far).amax(dim=1)
    if not exact:
        return inside
    du = u.unsqueeze(1) - au.unsqueeze(-1)  # [B, P, 1, W]
    dv = v.unsqueeze(1) - av.unsqueeze(-1)  # [B, P, H, 1]
    h = _planes(u, v, eu / length2, ev / length2, au, av).clamp_(0.0, 1.0)
    segment = torch.hypot(
        (du + far.unsqueeze(-1)) - h * eu.unsqueeze(-1), dv - h * ev.unsqueeze(-1)
    )
    return torch.where(inside <= 0, inside, segment.amin(dim=1))


def pyramid(
    u: torch.Tensor,
    v: torch.Tensor,
    u0: torch.Tensor,
    v0: torch.Tensor,
    half: torch.Tensor,
    height: torch.Tensor,
    yaw: torch.Tensor,
    tilt: float | torch.Tensor,
) -> Pair:
    """A square pyramid (base side ``2 half``, turned by ``yaw``; apex ``height`` above the
    base centre ``(u0, v0)``).

    Its image is the convex hull of the apex and the four base corners
    (:func:`convex_hull_distance`, the half-planes' bound: its corners are blunt). A pixel
    takes the shade of the nearest side face (a triangle from the apex to a base edge, by the
    largest of its three half-plane distances) turned towards the camera, whose direction is
    ``(0, tilt, sqrt(1 - tilt^2))`` in (X, Y, D). Face normals are ``(P_k - A) x (P_k+1 - A)``
    for base corners ``P`` and apex ``A = (0, height, 0)``, turned outward.
    """
    tilt_t = torch.as_tensor(tilt, dtype=u0.dtype, device=u0.device)
    x, d = _corners(yaw, half * math.sqrt(2.0), 4)  # [B, 4, 1]
    cu, cv = u0 + x, v0 + tilt * d
    apex_v = v0 - height
    pu = torch.cat([u0, cu], dim=1)  # apex first: [B, 5, 1]
    pv = torch.cat([apex_v, cv], dim=1)
    # Hull edges are among apex-corner and base-edge pairs, never a base diagonal.
    pairs = [(0, k) for k in range(1, 5)] + [(k, k % 4 + 1) for k in range(1, 5)]
    distance = convex_hull_distance(u, v, pu, pv, pairs, exact=False)
    # Faces k: apex, corner k, corner k + 1. World normals (X, Y, D).
    xb, db = x.roll(-1, dims=1), d.roll(-1, dims=1)
    nx = -height * db + d * height
    ny = d * xb - x * db
    nd = -x * height + height * xb
    outward = torch.where(nx * (x + xb) + nd * (d + db) < 0, -1.0, 1.0)
    norm = torch.sqrt(nx**2 + ny**2 + nd**2) * outward
    nx, ny, nd = nx / norm, ny / norm, nd / norm
    hidden = torch.where(ny * tilt_t + nd * torch.sqrt(1.0 - tilt_t**2) > 0, 0.0, 1e6)
    cub, cvb = cu.roll(-1, dims=1), cv.roll(-1, dims=1)
    apex_u, apex_vk = u0.expand_as(cu), apex_v.expand_as(cv)
    face = None
    for p, q, r in (
        ((apex_u, apex_vk), (cu, cv), (cub, cvb)),
        ((cu, cv), (cub, cvb), (apex_u, apex_vk)),
        ((cub, cvb), (apex_u, apex_vk), (cu, cv)),
    ):
        lu, lv = q[1] - p[1], p[0] - q[0]
        scale = torch.hypot(lu, lv).clamp(min=1e-12)
        scale = torch.where(lu * (r[0] - p[0]) + lv * (r[1] - p[1]) > 0, -scale, scale)
        term = _planes(u, v, lu / scale, lv / scale, p[0], p[1], hidden)
        face = term if face is None else torch.maximum(face, term)
    assert face is not None
    nearest = face.argmin(dim=1, keepdim=True)  # [B, 1, H, W]
    shades = lambert(nx, ny, nd).unsqueeze(-1).expand_as(face)
    return distance, torch.gather(shades, 1, nearest).squeeze(1)


def cone(
    u: torch.Tensor,
    v: torch.Tensor,
    u0: torch.Tensor,
    v0: torch.Tensor,
    radius: torch.Tensor,
    height: torch.Tensor,
    tilt: float | torch.Tensor,
) -> Pair:
    """An upright cone: its base disc projects to an ellipse of semi-axes ``(radius,
    tilt * radius)`` centred on ``(u0, v0)``, its apex is ``height`` above. The image is the
    ellipse joined to the triangle from the apex to its two tangent points, ``(+-radius
    sqrt(1 - (b / h)^2), -b^2 / h)`` from the centre for ``b = tilt * radius`` (the polar line
    of the apex). Side normal ``(cos beta x, sin beta, cos beta sqrt(1 - x^2))`` for the
    slope ``tan beta = radius / height`` and ``x`` the pixel's offset over the half-width of
    its row."""
    b = tilt * radius
    ratio = (b / height).clamp(max=0.99)
    tu = radius * torch.sqrt(1.0 - ratio**2)
    tv = v0 - b * ratio
    apex_v = v0 - height
    du = u - u0
    pu = torch.cat([u0, u0 - tu, u0 + tu], dim=1)
    pv = torch.cat([apex_v, tv, tv], dim=1)
    tri = convex_hull_distance(u, v, pu, pv)
    distance = torch.minimum(sdf.ellipse(du, v - v0, radius, b), tri)
    half_width = radius * ((v - apex_v) / height).clamp(0.05, 1.0)
    nx = (du / half_width).clamp(-1.0, 1.0)
    slope = torch.atan2(radius, height)
    cos_b, sin_b = torch.cos(slope), torch.sin(slope)
    side = lambert(cos_b * nx, sin_b.expand_as(nx), cos_b * torch.sqrt(1.0 - nx**2))
    return distance, side
