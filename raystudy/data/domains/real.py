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

The per-image draws (jitter, quality) are uniforms from
:func:`raystudy.data.domains.camera.mix32` of the grid position,
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

from raystudy.data.domains.camera import (
    BLUR_SIGMA_AT_64,
    JPEG_QUALITY,
    CameraShift,
    barrel_grid,
    blur_passes,
    mix32,
    noise_bank,
    uniforms,
)
from raystudy.data.domains.jpeg import JpegCodec

RELIEF_SIGMA_AT_64 = 2.0  # the height field's blur: how far in from an edge the shading reaches


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


class RealShift(CameraShift):
    """The ``real`` rendering of one dataset: ``apply(sim, background, flat) -> real``."""

    def __init__(self, channels: int, resolution: int, seed: int = 0) -> None:
        super().__init__(channels, resolution, seed)
        self.params = RealShiftParameters.draw(channels, seed)

    def apply(
        self, images: torch.Tensor, background: torch.Tensor, flat: torch.Tensor
    ) -> torch.Tensor:
        t = self._device_tables(images.device)
        draws = uniforms(flat, 5)
        # Steps 1 and 5: one resampling of the image and its coverage.
        x, cover = self.posed(images, background, draws, t)
        lit, shadow = self._shading(cover, t)
        # (x S + w T) G = x (S G) + w (T G); the black level rides on the noise, as the blur
        # keeps constants: blur(x) + b = blur(x + b). The shadow falls on the textured
        # background (on a black sim background it would darken nothing).
        x.mul_(lit).mul_(t.gain)
        x.addcmul_(cover.neg_().add_(1.0), t.lit_texture)
        x.mul_(shadow)
        self.blur_(x, t.blur_passes)
        return self.expose(x, mix32(flat), t, t.jpeg, draws[:, 4])

    def _shading(self, cover: torch.Tensor, t: _Tables) -> tuple[torch.Tensor, torch.Tensor]:
        """The per-pixel factors ``[B, 1, H, W]`` (new memory) of step 2: Lambert shading of
        the objects' relief, and the shadow they cast on the background (applied after the
        texture of step 3)."""
        h = cover.clone()
        self.blur_(h, t.relief_passes)
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
        noise = noise_bank(res, p.noise_std, gen)
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
            blur_passes=blur_passes(BLUR_SIGMA_AT_64, res),
            relief_passes=blur_passes(RELIEF_SIGMA_AT_64, res),
            shadow_offset=offset,
            light=(dx * planar, dy * planar, p.light_elevation),
            noise=noise.to(device),
            jpeg=JpegCodec(*JPEG_QUALITY, device) if ch in (1, 3) else None,
        )


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
