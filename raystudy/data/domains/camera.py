"""What a camera adds in both shifted domains, ``real`` (:mod:`raystudy.data.domains.real`) and
``photo`` (:mod:`raystudy.data.domains.photo`), and how they draw it: per-image uniforms hashed
from the image's row-major grid position (so a factor combination always looks the same), one
resampling through the pose ``A D(p) + t`` and the barrel lens ``D``, the binomial blur, sensor
noise from a fixed bank of Gaussian fields, clipping and JPEG at a per-image quality. A domain is
a :class:`CameraShift` that builds its tables once per device and adds its own steps between.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any, Protocol

import torch
import torch.nn.functional as F

from raystudy.data.core.workspace import Workspace
from raystudy.data.domains.jpeg import JpegCodec

NOISE_BANK = 64  # Gaussian fields; each image sums three of them
BLUR_SIGMA_AT_64 = 0.7
JPEG_QUALITY = (30, 50)  # per image, inclusive: a phone or webcam's everyday compression
_MASK32 = 0xFFFFFFFF
_GOLDEN32 = 0x9E3779B9  # odd: salts the hash once per per-image draw


class CameraParameters(Protocol):
    """The seeded constants a :class:`CameraShift` reads (both domains' parameters have them)."""

    @property
    def rotation_max(self) -> float: ...  # radians
    @property
    def scale_max(self) -> float: ...  # the scale is 1 +- this
    @property
    def shift_max(self) -> float: ...  # a fraction of the frame, per axis
    @property
    def black_level(self) -> float: ...


class CameraTables(Protocol):
    """What a :class:`CameraShift` reads of a domain's per-device tables."""

    @property
    def lens(self) -> torch.Tensor: ...  # D(p) at each pixel centre, viewable as [1, H * W, 2]
    @property
    def noise(self) -> torch.Tensor: ...  # [NOISE_BANK, H * W]: see noise_bank


class CameraShift(ABC):
    """A seeded domain of one dataset: ``apply(sim, background, flat) -> shifted``, its
    constants in ``params``, its tables built once per device."""

    params: Any

    def __init__(self, channels: int, resolution: int, seed: int) -> None:
        self.channels = channels
        self.resolution = resolution
        self.seed = seed
        self._tables: dict[torch.device, Any] = {}
        self._workspace = Workspace()

    @abstractmethod
    def apply(
        self, images: torch.Tensor, background: torch.Tensor, flat: torch.Tensor
    ) -> torch.Tensor:
        """Shift ``images`` ``[B, C, H, W]`` (sim, in [0, 1]; not modified); ``background``
        ``[B, 1, H, W]`` is 1 where no object covers the pixel, ``flat`` ``[B]`` the row-major
        grid position of each image (it seeds every per-image draw)."""

    @abstractmethod
    def _build_tables(self, device: torch.device) -> Any:
        """The domain's fixed fields and constants, placed on ``device``."""

    def _device_tables(self, device: torch.device) -> Any:
        tables = self._tables.get(device)
        if tables is None:
            tables = self._build_tables(device)
            self._tables[device] = tables
        return tables

    def sampling_grid(self, draws: torch.Tensor, t: CameraTables) -> torch.Tensor:
        """``[B, H, W, 2]``: where each output pixel reads the sim image, ``A D(p) + t`` with
        the per-image similarity ``A``, ``t`` of ``draws[:, :4]`` (uniforms in [0, 1))."""
        p: CameraParameters = self.params
        spread = draws[:, :4] * 2.0 - 1.0  # in [-1, 1)
        phi = spread[:, 0] * p.rotation_max
        scale = 1.0 + spread[:, 1] * p.scale_max
        cos, sin = torch.cos(phi) * scale, torch.sin(phi) * scale
        # Row vectors: grid @ A^T, A = s [[cos, -sin], [sin, cos]].
        a_t = torch.stack([torch.stack([cos, sin], 1), torch.stack([-sin, cos], 1)], 1)
        grid = torch.matmul(t.lens.view(1, -1, 2), a_t)  # [B, H * W, 2]
        grid += (spread[:, 2:4] * (2.0 * p.shift_max)).unsqueeze(1)  # the frame spans 2
        return grid.view(-1, self.resolution, self.resolution, 2)

    def posed(
        self, images: torch.Tensor, background: torch.Tensor, draws: torch.Tensor, t: CameraTables
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The sim images and their objects' coverage (new memory) read at
        :meth:`sampling_grid`: pose and lens in one resampling."""
        c = images.shape[1]
        both = torch.cat([images, background.neg().add_(1.0)], dim=1)
        warped = F.grid_sample(
            both, self.sampling_grid(draws, t), "bilinear", "border", align_corners=False
        )
        return warped[:, :c], warped[:, c:]

    def blur_(self, x: torch.Tensor, passes: int) -> None:
        """:func:`binomial_blur` of ``x`` in place (its scratch kept across calls)."""
        _blur_in_place(x, passes, self._workspace.get("blur", tuple(x.shape), x.device))

    def expose(
        self,
        x: torch.Tensor,
        hashed: torch.Tensor,
        t: CameraTables,
        jpeg: JpegCodec | None,
        quality_draw: torch.Tensor,
    ) -> torch.Tensor:
        """The camera's last steps on ``x`` ``[B, C, H, W]`` (in place where it can): sensor
        noise plus the black level, clipping to [0, 1], then JPEG (unless ``jpeg`` is None) at
        a quality in :data:`JPEG_QUALITY` chosen by the uniforms ``quality_draw`` ``[B]``."""
        noise = self._sensor_noise(hashed, t).add_(self.params.black_level)
        x += noise.view(x.shape[0], 1, *x.shape[2:])
        x.clamp_(0.0, 1.0)
        if jpeg is None:
            return x
        lo, hi = JPEG_QUALITY
        quality = lo + (quality_draw * (hi - lo + 1)).long().clamp_(max=hi - lo)
        return jpeg.roundtrip(x, quality)

    def _sensor_noise(self, hashed: torch.Tensor, t: CameraTables) -> torch.Tensor:
        """Per-image noise ``[B, H * W]`` (scratch), the same in every channel (luminance
        noise, as after a camera's demosaicing): the sum of the bank's fields picked by three
        6-bit slices of ``hashed`` (:func:`mix32` of the grid position), so the noise is fixed
        per combination, not per call."""
        shape = (hashed.shape[0], t.noise.shape[1])
        noise = self._workspace.get("noise", shape, hashed.device)
        term = self._workspace.get("noise_term", shape, hashed.device)
        torch.index_select(t.noise, 0, hashed % NOISE_BANK, out=noise)
        for shift in (6, 12):
            torch.index_select(t.noise, 0, (hashed >> shift) % NOISE_BANK, out=term)
            noise += term
        return noise


def noise_bank(resolution: int, std: float, gen: torch.Generator) -> torch.Tensor:
    """``[NOISE_BANK, R * R]`` standard normal fields from ``gen``, scaled so that a sum of
    three has standard deviation ``std``."""
    noise = torch.randn((NOISE_BANK, resolution * resolution), generator=gen)
    noise *= std / math.sqrt(3.0)  # a sum of three stays at std
    return noise


def blur_passes(sigma_at_64: float, resolution: int) -> int:
    """Binomial passes for a Gaussian blur of ``sigma_at_64 (R / 64)`` pixels: ``round(2
    sigma^2)``, at least one (each pass adds variance 1/2 pixel^2)."""
    sigma = sigma_at_64 * resolution / 64
    return max(1, round(2.0 * sigma**2))


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
