"""Procedural datasets: a simulated renderer plus its seeded ``real`` and ``photo`` domains.

A subclass renders the ``sim`` image and the objects' coverage; this class turns that into the
``real`` domain (:mod:`raystudy.data.domains.real`) or the ``photo`` domain
(:mod:`raystudy.data.domains.photo`) through the same code path for every dataset, so a split's
OOD2-B scenario works on any procedural dataset, in either domain.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import numpy as np
import torch

from raystudy.data.core.base import GroundTruthDataset
from raystudy.data.core.factors import grid_position
from raystudy.data.core.registry import DatasetOptionError
from raystudy.data.domains.photo import PhotoShift
from raystudy.data.domains.real import RealShift

#: The largest `resolution` a procedural dataset renders: one 3-channel image is then 12 MB,
#: a batch of 64 about 800 MB. Beyond it a typo (`resolution: 64000`) would only surface as
#: an out-of-memory kill in every trial.
MAX_RESOLUTION = 1024


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
    shifts seeded by ``real_seed``)."""

    domains = ("sim", "real", "photo")
    real_seed: int = 0

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
        shift = self.photo_shift if domain == "photo" else self.real_shift
        return shift.apply(image, background, grid_position(idx, self.factors.sizes))

    @property
    def real_shift(self) -> RealShift:
        shift = getattr(self, "_real_shift", None)
        if shift is None:
            shift = RealShift(self.channels, self.resolution, self.real_seed)
            self._real_shift = shift
        return shift

    @property
    def photo_shift(self) -> PhotoShift:
        shift = getattr(self, "_photo_shift", None)
        if shift is None:
            shift = PhotoShift(self.channels, self.resolution, self.real_seed)
            self._photo_shift = shift
        return shift

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
