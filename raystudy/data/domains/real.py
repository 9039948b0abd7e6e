"""The ``real`` domain: a fixed, seeded shift of a procedural renderer towards camera images.

It stands in for real photographs of a simulated scene: Dittadi et al. (2021, "On the Transfer
of Disentangled Representations in Realistic Settings") score probes fitted on simulated images
on real ones (their OOD2-B), as Gondal et al. (2019, MPI3D "toy" vs "real") do for sim2real.
The scene (every factor) is unchanged; only the image formation differs, in the order a camera
applies it. Pixel coordinates ``p`` are grid_sample's, in [-1, 1] across the frame.

1. geometry jitter (where the camera stood): ``x(p) = sim(A p + t)``, ``A = s R(phi)``, with
   ``phi``, ``s``, ``t`` per image in ``[-phi_max, phi_max]``, ``[1 - s_max, 1 + s_max]``,
   ``[-t_max, t_max]^2``; the objects' coverage ``m`` is resampled the same way (bilinear,
   edges repeated);
2. shading and drop shadow: the blurred coverage ``h = blur(m)`` is a height field with normal
   ``n = (-beta dh/dx, -beta dh/dy, 1)``; under a light ``l`` (seeded; its in-plane part is the
   lighting gradient's direction) the objects get the Lambert ratio against a flat surface,
   ``x *= 1 + m (max(n . l, 0) / (|n| l_z) - 1)`` (Lambert 1760), and the background the
   shadow of the objects cast away from the light, ``x *= 1 - a_s (1 - m) h(p + o)``, applied
   after the texture of step 3 so that it darkens the textured background;
3. background texture: ``x += a_t * w * T`` where ``w = 1 - m`` is the background weight and
   ``T`` in [0, 1] a fixed value-noise field (two octaves of bilinearly upsampled uniform
   noise, i.e. "value noise"), tinted per channel;
4. lighting: ``x *= G``, ``G(p) = g0 + g1 <p - 1/2, d> - g2 |p - 1/2|^2`` (``p`` in [0, 1]
   here): a linear gradient along a seeded direction ``d`` and a vignette;
5. lens distortion, the one-coefficient radial Brown-Conrady model (Brown 1966, "Decentering
   distortion of lenses") as a backward map: the output at ``p`` is the image at
   ``p (1 + k1 |p|^2) / (1 + k1)``, ``k1 > 0`` seeded (barrel: straight lines bow outwards;
   the centre and the edges' midpoints stay put);
6. colour cast and black level: ``x = x * (1 + c) + b`` with a per-channel ``c``;
7. optical blur: the binomial filter ``[1, 2, 1] / 4`` along rows and columns, ``n`` times, a
   discrete Gaussian of variance ``n / 2`` pixels^2 (Burt & Adelson 1983); ``n = round(2
   sigma^2)`` for ``sigma = 0.7 (R / 64)`` pixels, so one pass at 64x64 and four at 128x128.
   Edges are replicated (a camera sees the scene go on past the frame, not black). Shifted
   in-place additions: far cheaper on a CPU than a depthwise convolution;
8. sensor noise: ``x += s * n`` with ``n`` standard normal per pixel (shared by the channels:
   luminance noise), a deterministic function of the image's row-major grid position, so the
   same indices always give the same image:
   ``n = (N[i] + N[j] + N[k]) / sqrt 3`` for three entries of a fixed bank of 64 Gaussian
   fields chosen by a hash of the position (64^3 distinct fields at the cost of three row
   copies);
9. clipping to [0, 1];
10. JPEG compression at a per-image quality in 30..50 (:mod:`raystudy.data.domains.jpeg`: JFIF
    YCbCr, 4:2:0, 8x8 DCT, T.81 Annex K tables; Wallace 1992, ITU-T T.81).

The per-image draws (jitter, quality) are uniforms from :func:`mix32` of the grid position,
like the noise, so a factor combination always looks the same. Steps 1 and 5 are one
resampling of the sim image: ``sim(A D(p) + t)``; the fixed fields of steps 3-4 are
distorted once when the tables are built, and steps 2-3 read the coverage after both maps
(so the shading and the shadow offset live in the distorted frame; at ``k1 <= 0.1`` the lens
changes lengths by at most ~10%, and one resampling blurs less than two).

Every constant is drawn once from ``numpy.random.default_rng(seed)``; ``seed`` is a dataset
option (``real_seed``), so "real" is one fixed domain, not a fresh augmentation per call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from raystudy.data.core.workspace import Workspace
from raystudy.data.domains.jpeg import JpegCodec

NOISE_BANK = 64  # Gaussian fields; each image sums three of them
BLUR_SIGMA_AT_64 = 0.7
RELIEF_SIGMA_AT_64 = 2.0  # the height field's blur: how far in from an edge the shading reaches
JPEG_QUALITY = (30, 50)  # per image, inclusive: a phone or webcam's everyday compression
_MASK32 = 0xFFFFFFFF
_GOLDEN32 = 0x9E3779B9  # odd: salts the hash once per per-image draw


@dataclass(frozen=True)
class RealShiftParameters:
    """The seeded constants of one ``real`` domain."""

    texture_amplitude: float
    texture_tint: tuple[float, ...]
    gain: float
    gradient: float
    gradient_direction: tuple[float, float]
    vignette: float
    cast: tuple[float, ...]
    black_level: float
    noise_std: float
    rotation_max: float  # radians
    scale_max: float  # the scale is 1 +- this
    shift_max: float  # a fraction of the frame, per axis
    light_elevation: float  # l_z of the unit light vector
    relief: float  # beta: the height field's slope per pixel at 64 px becomes this times steeper
    shadow_strength: float
    shadow_distance: float  # a fraction of the frame
    lens_k1: float

    @classmethod
    def draw(cls, channels: int, seed: int) -> RealShiftParameters:
        rng = np.random.default_rng([seed, 0x5EA1])
        angle = rng.uniform(0.0, 2.0 * math.pi)
        # The first draws keep their order, so a seed keeps its texture, lighting and cast.
        return cls(
            texture_amplitude=float(rng.uniform(0.10, 0.16)),
            texture_tint=tuple(rng.uniform(0.7, 1.0, channels).tolist()),
            gain=float(rng.uniform(0.92, 1.0)),
            gradient=float(rng.uniform(0.30, 0.40)),
            gradient_direction=(math.cos(angle), math.sin(angle)),
            vignette=float(rng.uniform(0.35, 0.5)),
            # A warm or cool cast: channels move apart by up to 15%; one channel stays put
            # for a grey image, whose "cast" is a contrast change.
            cast=tuple(rng.uniform(-0.15, 0.10, channels).tolist()) if channels > 1 else (-0.1,),
            black_level=float(rng.uniform(0.03, 0.06)),
            noise_std=float(rng.uniform(0.025, 0.035)),
            rotation_max=math.radians(float(rng.uniform(2.0, 4.0))),
            scale_max=float(rng.uniform(0.06, 0.10)),
            shift_max=float(rng.uniform(0.02, 0.04)),
            light_elevation=float(rng.uniform(0.5, 0.7)),
            relief=float(rng.uniform(5.0, 8.0)),
            shadow_strength=float(rng.uniform(0.30, 0.45)),
            shadow_distance=float(rng.uniform(0.03, 0.05)),
            lens_k1=float(rng.uniform(0.04, 0.10)),
        )


@dataclass(frozen=True)
class _Tables:
    gain: torch.Tensor  # [1, C, H, W]: lighting times colour cast, lens-distorted
    lit_texture: torch.Tensor  # [1, C, H, W]: the tinted, scaled texture times the gain
    lens: torch.Tensor  # [1, H * W, 2]: D(p), the lens's backward map of each pixel centre
    blur_passes: int
    relief_passes: int
    shadow_offset: tuple[int, int]  # pixels (rows, columns) from a pixel to its occluder
    light: tuple[float, float, float]
    noise: torch.Tensor  # [NOISE_BANK, H * W], already scaled by noise_std / sqrt(3)
    jpeg: JpegCodec | None  # None for channel counts JPEG does not code


class RealShift:
    """The ``real`` rendering of one dataset: ``apply(sim, background, flat) -> real``."""

    def __init__(self, channels: int, resolution: int, seed: int = 0) -> None:
        self.channels = channels
        self.resolution = resolution
        self.seed = seed
        self.params = RealShiftParameters.draw(channels, seed)
        self._tables: dict[torch.device, _Tables] = {}
        self._workspace = Workspace()

    def apply(
        self, images: torch.Tensor, background: torch.Tensor, flat: torch.Tensor
    ) -> torch.Tensor:
        """Shift ``images`` ``[B, C, H, W]`` (sim, in [0, 1]; not modified); ``background``
        ``[B, 1, H, W]`` is 1 where no object covers the pixel, ``flat`` ``[B]`` the row-major
        grid position of each image (it seeds every per-image draw)."""
        t = self._device_tables(images.device)
        c = images.shape[1]
        draws = uniforms(flat, 5)
        # Steps 1 and 5: one resampling of the image and its coverage.
        both = torch.cat([images, background.neg().add_(1.0)], dim=1)
        warped = F.grid_sample(
            both, self.sampling_grid(draws, t), "bilinear", "border", align_corners=False
        )
        x, cover = warped[:, :c], warped[:, c:]
        lit, shadow = self._shading(cover, t)
        # (x S + w T) G = x (S G) + w (T G); the black level rides on the noise, as the blur
        # keeps constants: blur(x) + b = blur(x + b). The shadow falls on the textured
        # background (on a black sim background it would darken nothing).
        x.mul_(lit).mul_(t.gain)
        x.addcmul_(cover.neg_().add_(1.0), t.lit_texture)
        x.mul_(shadow)
        scratch = self._workspace.get("blur", tuple(x.shape), x.device)
        _blur_in_place(x, t.blur_passes, scratch)
        noise = self._sensor_noise(flat, t).add_(self.params.black_level)
        x += noise.view(x.shape[0], 1, *x.shape[2:])
        x.clamp_(0.0, 1.0)
        if t.jpeg is None:
            return x
        lo, hi = JPEG_QUALITY
        quality = lo + (draws[:, 4] * (hi - lo + 1)).long().clamp_(max=hi - lo)
        return t.jpeg.roundtrip(x, quality)

    def sampling_grid(self, draws: torch.Tensor, t: _Tables) -> torch.Tensor:
        """``[B, H, W, 2]``: where each output pixel reads the sim image, ``A D(p) + t`` with
        the per-image similarity ``A``, ``t`` of ``draws[:, :4]`` (uniforms in [0, 1))."""
        p = self.params
        spread = draws[:, :4] * 2.0 - 1.0  # in [-1, 1)
        phi = spread[:, 0] * p.rotation_max
        scale = 1.0 + spread[:, 1] * p.scale_max
        cos, sin = torch.cos(phi) * scale, torch.sin(phi) * scale
        # Row vectors: grid @ A^T, A = s [[cos, -sin], [sin, cos]].
        a_t = torch.stack([torch.stack([cos, sin], 1), torch.stack([-sin, cos], 1)], 1)
        grid = torch.matmul(t.lens, a_t)  # [B, H * W, 2]
        grid += (spread[:, 2:4] * (2.0 * p.shift_max)).unsqueeze(1)  # the frame spans 2
        return grid.view(-1, self.resolution, self.resolution, 2)

    def _shading(self, cover: torch.Tensor, t: _Tables) -> tuple[torch.Tensor, torch.Tensor]:
        """The per-pixel factors ``[B, 1, H, W]`` (new memory) of step 2: Lambert shading of
        the objects' relief, and the shadow they cast on the background (applied after the
        texture of step 3)."""
        h = cover.clone()
        _blur_in_place(h, t.relief_passes, torch.empty_like(h))
        gy, gx = central_differences(h)
        slope = self.params.relief * self.resolution / 64.0  # per pixel at 64 px
        lx, ly, lz = t.light
        # n . l / (|n| l_z) for n = (-b gx, -b gy, 1): 1 on a flat surface.
        lit = gx.mul(lx).add_(gy, alpha=ly).mul_(-slope).add_(lz)
        norm = gx.square_().add_(gy.square_()).mul_(slope**2).add_(1.0).sqrt_().mul_(lz)
        lit.div_(norm).clamp_(min=0.0).sub_(1.0).mul_(cover).add_(1.0)
        shadow = shifted(h, t.shadow_offset)
        shadow.mul_(cover.neg().add_(1.0)).mul_(-self.params.shadow_strength).add_(1.0)
        return lit, shadow

    def _sensor_noise(self, flat: torch.Tensor, t: _Tables) -> torch.Tensor:
        """Per-image noise ``[B, H * W]`` (scratch), the same in every channel (luminance
        noise, as after a camera's demosaicing); the bank entries come from a hash of the
        grid position, so the noise is fixed per combination, not per call."""
        h = mix32(flat)
        shape = (flat.shape[0], t.noise.shape[1])
        noise = self._workspace.get("noise", shape, flat.device)
        term = self._workspace.get("noise_term", shape, flat.device)
        torch.index_select(t.noise, 0, h % NOISE_BANK, out=noise)
        for shift in (6, 12):
            torch.index_select(t.noise, 0, (h >> shift) % NOISE_BANK, out=term)
            noise += term
        return noise

    def _device_tables(self, device: torch.device) -> _Tables:
        tables = self._tables.get(device)
        if tables is None:
            tables = self._build_tables(device)
            self._tables[device] = tables
        return tables

    def _build_tables(self, device: torch.device) -> _Tables:
        p, res, ch = self.params, self.resolution, self.channels
        # Everything random comes from one CPU generator, so every device gets the same domain.
        gen = torch.Generator().manual_seed(
            int(np.random.default_rng([self.seed, 1]).integers(2**62))
        )
        texture = value_noise(ch, res, gen)
        tint = torch.tensor(p.texture_tint, dtype=torch.float32).view(1, ch, 1, 1)
        centres = (torch.arange(res, dtype=torch.float32) + 0.5) / res - 0.5
        ys, xs = torch.meshgrid(centres, centres, indexing="ij")
        dx, dy = p.gradient_direction
        gain = p.gain + p.gradient * (dx * xs + dy * ys) - p.vignette * (xs**2 + ys**2)
        sigma = BLUR_SIGMA_AT_64 * res / 64
        relief_sigma = RELIEF_SIGMA_AT_64 * res / 64
        noise = torch.randn((NOISE_BANK, res * res), generator=gen)
        noise *= p.noise_std / math.sqrt(3.0)  # a sum of three stays at noise_std
        cast = 1.0 + torch.tensor(p.cast, dtype=torch.float32).view(1, ch, 1, 1)
        lens = barrel_grid(res, p.lens_k1)
        # The lighting and texture are fixed fields of the frame: distort them once here.
        fields = torch.cat([gain.view(1, 1, res, res), texture.unsqueeze(0)], dim=1)
        fields = F.grid_sample(fields, lens, "bilinear", "border", align_corners=False)
        gain_cast = fields[:, :1] * cast
        lit_texture = fields[:, 1:] * tint * p.texture_amplitude * gain_cast
        planar = math.sqrt(1.0 - p.light_elevation**2)
        # The shadow falls away from the light, which sits towards +d (the bright side).
        offset = (round(-dy * p.shadow_distance * res), round(-dx * p.shadow_distance * res))
        return _Tables(
            gain=gain_cast.to(device),
            lit_texture=lit_texture.to(device),
            lens=lens.view(1, res * res, 2).to(device),
            blur_passes=max(1, round(2.0 * sigma**2)),
            relief_passes=max(1, round(2.0 * relief_sigma**2)),
            shadow_offset=offset,
            light=(dx * planar, dy * planar, p.light_elevation),
            noise=noise.to(device),
            jpeg=JpegCodec(*JPEG_QUALITY, device) if ch in (1, 3) else None,
        )


def uniforms(flat: torch.Tensor, count: int) -> torch.Tensor:
    """``[B, count]`` uniforms in [0, 1), each a hash of the grid position ``flat`` salted by
    its column: fixed per factor combination, independent across columns."""
    base = mix32(flat)
    cols = [mix32(base ^ ((k + 1) * _GOLDEN32 & _MASK32)) for k in range(count)]
    return torch.stack(cols, dim=1).double().div_(2.0**32).float()


def barrel_grid(resolution: int, k1: float) -> torch.Tensor:
    """``[1, R, R, 2]``: the Brown-Conrady backward map ``p (1 + k1 |p|^2) / (1 + k1)`` at
    each pixel centre ``p`` (grid_sample's ``(x, y)`` in [-1, 1], ``align_corners=False``)."""
    centres = (torch.arange(resolution, dtype=torch.float32) * 2.0 + 1.0) / resolution - 1.0
    ys, xs = torch.meshgrid(centres, centres, indexing="ij")
    radial = (1.0 + k1 * (xs**2 + ys**2)) / (1.0 + k1)
    return torch.stack([xs * radial, ys * radial], dim=-1).unsqueeze(0)


def central_differences(h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(dh/dy, dh/dx)`` per pixel of ``[..., H, W]``: ``(h[i + 1] - h[i - 1]) / 2`` inside,
    one-sided at the edges (new memory)."""
    gy, gx = torch.empty_like(h), torch.empty_like(h)
    for g, axis in ((gy, -2), (gx, -1)):
        n = h.shape[axis]
        torch.sub(h.narrow(axis, 2, n - 2), h.narrow(axis, 0, n - 2), out=g.narrow(axis, 1, n - 2))
        g.narrow(axis, 1, n - 2).mul_(0.5)
        torch.sub(h.narrow(axis, 1, 1), h.narrow(axis, 0, 1), out=g.narrow(axis, 0, 1))
        torch.sub(h.narrow(axis, n - 1, 1), h.narrow(axis, n - 2, 1), out=g.narrow(axis, n - 1, 1))
    return gy, gx


def shifted(h: torch.Tensor, offset: tuple[int, int]) -> torch.Tensor:
    """``out[i, j] = h[i + dy, j + dx]`` over the last two axes, 0 where that falls outside
    (new memory)."""
    out = torch.zeros_like(h)
    dy, dx = offset
    n, m = h.shape[-2:]
    if abs(dy) >= n or abs(dx) >= m:
        return out
    src = h.narrow(-2, max(dy, 0), n - abs(dy)).narrow(-1, max(dx, 0), m - abs(dx))
    out.narrow(-2, max(-dy, 0), n - abs(dy)).narrow(-1, max(-dx, 0), m - abs(dx)).copy_(src)
    return out


def value_noise(channels: int, resolution: int, gen: torch.Generator) -> torch.Tensor:
    """A smooth random field ``[C, R, R]`` in [0, 1]: uniform noise on an 8x8 and a 24x24
    lattice, bilinearly upsampled and summed with weights 2:1 (two octaves of value noise)."""
    total = torch.zeros((channels, resolution, resolution))
    for lattice, weight in ((8, 2.0), (24, 1.0)):
        coarse = torch.rand((1, channels, lattice, lattice), generator=gen)
        up = F.interpolate(
            coarse, size=(resolution, resolution), mode="bilinear", align_corners=False
        )
        total += weight * up[0]
    lo, hi = total.amin(), total.amax()
    return (total - lo) / (hi - lo)


def binomial_blur(x: torch.Tensor, passes: int = 1) -> torch.Tensor:
    """``[1, 2, 1] / 4`` along the last two axes, ``passes`` times, edges replicated: each
    pass adds variance 1/2 pixel^2 per axis. ``x`` is not modified."""
    out = x.clone()
    _blur_in_place(out, passes, torch.empty_like(x))
    return out


def _blur_in_place(x: torch.Tensor, passes: int, scratch: torch.Tensor) -> None:
    """:func:`binomial_blur` into ``x`` itself, ping-ponging with ``scratch`` (same shape):
    rows into the scratch, columns back into ``x``."""
    for _ in range(passes):
        _binomial_along(x, scratch, -1)
        _binomial_along(scratch, x, -2)


def _binomial_along(src: torch.Tensor, dst: torch.Tensor, axis: int) -> None:
    n = src.shape[axis]
    torch.mul(src, 0.5, out=dst)
    # dst[i] += src[i - 1] / 4 and dst[i] += src[i + 1] / 4, the missing neighbour at an
    # edge being the edge pixel itself (replicate padding).
    dst.narrow(axis, 1, n - 1).add_(src.narrow(axis, 0, n - 1), alpha=0.25)
    dst.narrow(axis, 0, 1).add_(src.narrow(axis, 0, 1), alpha=0.25)
    dst.narrow(axis, 0, n - 1).add_(src.narrow(axis, 1, n - 1), alpha=0.25)
    dst.narrow(axis, n - 1, 1).add_(src.narrow(axis, n - 1, 1), alpha=0.25)


def mix32(x: torch.Tensor) -> torch.Tensor:
    """A 32-bit integer hash of int64 tensors, on any device: the low 32 bits are mixed by
    ``x ^= x >> 16; x *= 0x45d9f3b`` twice and a last xor-shift (the well-known
    "hash prospector" finaliser). Products stay below 2^59, so int64 never overflows."""
    x = x & _MASK32
    for _ in range(2):
        x = ((x ^ (x >> 16)) * 0x45D9F3B) & _MASK32
    return x ^ (x >> 16)
