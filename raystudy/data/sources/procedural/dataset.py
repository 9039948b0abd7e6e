"""Procedural datasets: a simulated renderer plus its seeded ``real`` and ``photo`` domains.

A subclass renders the ``sim`` image and the objects' coverage; this class turns that into the
``real`` domain (:mod:`raystudy.data.domains.real`) or the ``photo`` domain
(:mod:`raystudy.data.domains.photo`) through the same code path for every dataset, so a split's
OOD2-B scenario works on any procedural dataset, in either domain.
"""

from __future__ import annotations

import dataclasses
import math
from abc import abstractmethod
from typing import Any, TypeVar

import numpy as np
import torch

from raystudy.data.core.base import GroundTruthDataset
from raystudy.data.core.factors import Factor, FactorSpace, grid_position
from raystudy.data.core.registry import DatasetOptionError
from raystudy.data.core.workspace import Workspace
from raystudy.data.domains.camera import CameraShift
from raystudy.data.domains.photo import PhotoShift
from raystudy.data.domains.real import RealShift

#: The shifted domains, by name: each renders a procedural dataset's ``sim`` image anew.
SHIFTS: dict[str, type[CameraShift]] = {"real": RealShift, "photo": PhotoShift}

#: The largest `resolution` a procedural dataset renders: one 3-channel image is then 12 MB,
#: a batch of 64 about 800 MB. Beyond it a typo (`resolution: 64000`) would only surface as
#: an out-of-memory kill in every trial.
MAX_RESOLUTION = 1024
T = TypeVar("T")


def pixel_span(lo: float, hi: float, resolution: int, margin: int = 2) -> slice:
    """The pixel rows (or columns) that hold ``[lo, hi]`` (in image sides) with ``margin``
    pixels more on each side for the anti-aliasing ramp and rounding, clipped to the image:
    the crop a renderer draws an object in instead of the whole image."""
    first = max(0, math.floor(lo * resolution) - margin)
    return slice(first, min(resolution, math.ceil(hi * resolution) + margin))


def placed(tables: T, device: torch.device) -> T:
    """``tables`` (a dataclass) with each floating tensor cast to float32 on ``device`` and
    each other tensor moved there. A renderer computes its tables in float64 on the CPU and
    places them so, so every device starts from the same numbers."""
    moved = {}
    for f in dataclasses.fields(tables):
        value = getattr(tables, f.name)
        if isinstance(value, torch.Tensor):
            dtype = torch.float32 if value.is_floating_point() else value.dtype
            moved[f.name] = value.to(device=device, dtype=dtype)
    return dataclasses.replace(tables, **moved)


def check_resolution(resolution: int, smallest: int) -> None:
    if not smallest <= resolution <= MAX_RESOLUTION:
        raise ValueError(
            f"resolution must be in {smallest}..{MAX_RESOLUTION} pixels, got {resolution}"
        )


def check_real_seed(real_seed: int) -> int:
    """The `real_seed` option, refused unless a seed every generator takes (0..2**32-1)."""
    if not 0 <= real_seed < 2**32:
        raise DatasetOptionError(
            f"real_seed must be in 0..{2**32 - 1}, got {real_seed}", "real_seed"
        )
    return real_seed


class ProceduralDataset(GroundTruthDataset):
    """A dataset drawn from its factors, in the domains ``sim``, ``real`` and ``photo`` (both
    shifts seeded by ``real_seed``). Its options are ``resolution`` and ``real_seed`` unless a
    subclass takes more."""

    domains = ("sim", "real", "photo")
    real_seed: int = 0
    #: The smallest ``resolution`` the renderer draws.
    smallest_resolution = 8

    def __init__(self, resolution: int = 64, real_seed: int = 0) -> None:
        check_resolution(resolution, self.smallest_resolution)
        self.resolution = resolution
        self.real_seed = check_real_seed(real_seed)
        self.factors = FactorSpace(self._factor_tuple())
        self._workspace = Workspace()

    def _factor_tuple(self) -> tuple[Factor, ...]:
        """The dataset's factors in row-major order."""
        raise NotImplementedError

    def render(self, indices: torch.Tensor | np.ndarray, domain: str = "sim") -> torch.Tensor:
        self.check_domain(domain)
        idx = self.as_index_tensor(indices)
        if idx.shape[0] == 0:
            shape = (0, self.channels, self.resolution, self.resolution)
            return torch.zeros(shape, dtype=torch.float32, device=idx.device)
        image, foreground = self._render_sim(idx)
        if domain == "sim":
            return image
        background = foreground.mul_(-1.0).add_(1.0)  # the coverage is ours to reuse
        return self.shift(domain).apply(image, background, grid_position(idx, self.factors.sizes))

    def shift(self, domain: str) -> CameraShift:
        """The seeded shift that renders ``domain`` (``real`` or ``photo``), built once."""
        shifts: dict[str, CameraShift] = self.__dict__.setdefault("_shifts", {})
        if domain not in shifts:
            shifts[domain] = SHIFTS[domain](self.channels, self.resolution, self.real_seed)
        return shifts[domain]

    @property
    def real_shift(self) -> CameraShift:
        return self.shift("real")

    @property
    def photo_shift(self) -> CameraShift:
        return self.shift("photo")

    def _device_tables(self, device: torch.device) -> Any:
        """The dataset's precomputed tables on `device`, built once per device: rendering
        runs every training step and must not rebuild them."""
        cache: dict[torch.device, Any] = self.__dict__.setdefault("_tables", {})
        if device not in cache:
            cache[device] = self._build_tables(device)
        return cache[device]

    def _build_tables(self, device: torch.device) -> Any:
        """Tensors a subclass renders from (grids, colour tables), placed on `device`."""
        raise NotImplementedError

    @abstractmethod
    def _render_sim(self, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The simulated images ``[B, C, H, W]`` of validated indices (new memory: they are
        returned), and the coverage ``[B, 1, H, W]`` in [0, 1] of everything that is not
        background (which the caller may overwrite, so it may be scratch)."""
