"""The ``real`` domain: a fixed, seeded shift of a procedural renderer towards camera images.

It stands in for real photographs of a simulated scene: Dittadi et al. (2021, "On the Transfer
of Disentangled Representations in Realistic Settings") score probes fitted on simulated images
on real ones (their OOD2-B), as Gondal et al. (2019, MPI3D "toy" vs "real") do for sim2real.
The scene (every factor) is unchanged; only the image formation differs, in the order a camera
applies it:

1. background texture: ``x += a_t * w * T`` where ``w`` is the background weight (1 minus the
   objects' coverage) and ``T`` in [0, 1] a fixed value-noise field (two octaves of bilinearly
   upsampled uniform noise, i.e. "value noise"), tinted per channel;
2. lighting: ``x *= G``, ``G(p) = g0 + g1 <p - 1/2, d> - g2 |p - 1/2|^2``: a linear gradient
   along a seeded direction ``d`` and a vignette;
3. colour cast and black level: ``x = x * (1 + c) + b`` with a per-channel ``c``;
4. optical blur: the binomial filter ``[1, 2, 1] / 4`` along rows and columns, ``n`` times, a
   discrete Gaussian of variance ``n / 2`` pixels^2 (Burt & Adelson 1983); ``n = round(2
   sigma^2)`` for ``sigma = 0.7 (R / 64)`` pixels, so one pass at 64x64 and four at 128x128.
   Edges are replicated (a camera sees the scene go on past the frame, not black). Shifted
   in-place additions: far cheaper on a CPU than a depthwise convolution;
5. sensor noise: ``x += s * n`` with ``n`` standard normal per pixel (shared by the channels:
   luminance noise), a deterministic function of the image's row-major grid position, so the
   same indices always give the same image:
   ``n = (N[i] + N[j] + N[k]) / sqrt 3`` for three entries of a fixed bank of 64 Gaussian
   fields chosen by a hash of the position (64^3 distinct fields at the cost of three row
   copies);
6. clipping to [0, 1].

Every constant is drawn once from ``numpy.random.default_rng(seed)``; ``seed`` is a dataset
option (``real_seed``), so "real" is one fixed domain, not a fresh augmentation per call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from raystudy.data.workspace import Workspace

NOISE_BANK = 64  # Gaussian fields; each image sums three of them
BLUR_SIGMA_AT_64 = 0.7
_MASK32 = 0xFFFFFFFF


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

    @classmethod
    def draw(cls, channels: int, seed: int) -> RealShiftParameters:
        rng = np.random.default_rng([seed, 0x5EA1])
        angle = rng.uniform(0.0, 2.0 * math.pi)
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
        )


@dataclass(frozen=True)
class _Tables:
    gain: torch.Tensor  # [1, C, H, W]: lighting times colour cast
    lit_texture: torch.Tensor  # [1, C, H, W]: the tinted, scaled texture times the gain
    blur_passes: int
    noise: torch.Tensor  # [NOISE_BANK, H * W], already scaled by noise_std / sqrt(3)


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
        grid position of each image (it seeds the sensor noise)."""
        t = self._device_tables(images.device)
        # One new tensor (the result), then every step in place or in reused scratch
        # (:mod:`raystudy.data.workspace`): the shift is a few passes over the batch, and
        # memory traffic is what it costs on a CPU.
        # (x + w T) G = x G + w (T G); the black level rides on the noise, as the blur keeps
        # constants: blur(x) + b = blur(x + b).
        x = torch.mul(images, t.gain).addcmul_(background, t.lit_texture)
        scratch = self._workspace.get("blur", tuple(x.shape), x.device)
        _blur_in_place(x, t.blur_passes, scratch)
        noise = self._sensor_noise(flat, t).add_(self.params.black_level)
        x += noise.view(x.shape[0], 1, *x.shape[2:])
        return x.clamp_(0.0, 1.0)

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
        noise = torch.randn((NOISE_BANK, res * res), generator=gen)
        noise *= p.noise_std / math.sqrt(3.0)  # a sum of three stays at noise_std
        cast = 1.0 + torch.tensor(p.cast, dtype=torch.float32).view(1, ch, 1, 1)
        gain_cast = gain.view(1, 1, res, res) * cast
        return _Tables(
            gain=gain_cast.to(device),
            lit_texture=(texture.unsqueeze(0) * tint * p.texture_amplitude * gain_cast).to(device),
            blur_passes=max(1, round(2.0 * sigma**2)),
            noise=noise.to(device),
        )


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
