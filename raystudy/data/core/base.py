"""The ground-truth dataset interface (docs/architecture/data.md, section 3).

A dataset is a :class:`FactorSpace` plus a renderer from factor indices to images. Images are
made on demand, per batch, on the device of the indices, so a trial never touches disk or
DataLoader workers in its hot loop and can draw unlimited fresh samples from exactly the factor
combinations its split allows.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
import torch

from raystudy.data.core.factors import FactorSpace


class GroundTruthDataset(ABC):
    """Factor space + ``render`` (indices -> float32 ``[B, C, H, W]`` in [0, 1]) + ``feasible``."""

    name: str
    factors: FactorSpace
    channels: int
    resolution: int = 64
    domains: tuple[str, ...] = ("sim",)

    @abstractmethod
    def render(self, indices: torch.Tensor | np.ndarray, domain: str = "sim") -> torch.Tensor:
        """Images for ``(B, K)`` factor indices: float32 ``[B, C, H, W]`` in [0, 1], on the
        device of ``indices`` when it is a tensor, on CPU for a numpy array."""

    def feasible(self, indices: torch.Tensor | np.ndarray) -> torch.Tensor:
        """Which combinations are physically possible; every one unless a subclass says not
        (datasets with correlated factors, e.g. a finger that cannot enter the floor)."""
        idx = self.as_index_tensor(indices)
        return torch.ones(idx.shape[0], dtype=torch.bool, device=idx.device)

    @property
    def every_state_feasible(self) -> bool:
        """True unless a subclass overrides :meth:`feasible`: samplers then skip the check."""
        return type(self).feasible is GroundTruthDataset.feasible

    def check_domain(self, domain: str) -> None:
        if domain not in self.domains:
            raise ValueError(
                f"dataset {self.name!r} has no domain {domain!r}; allowed domains: "
                f"{', '.join(self.domains)}"
            )

    def as_index_tensor(self, indices: torch.Tensor | np.ndarray) -> torch.Tensor:
        """Validated int64 ``(B, K)`` tensor, kept on the caller's device."""
        if isinstance(indices, torch.Tensor):
            if indices.is_floating_point() or indices.is_complex() or indices.dtype == torch.bool:
                raise ValueError(f"factor indices must be integers, got dtype {indices.dtype}")
            idx = indices.long()
        else:
            arr = np.asarray(indices)
            if arr.dtype.kind not in "iu":
                raise ValueError(f"factor indices must be integers, got dtype {arr.dtype}")
            # Contiguous copy if needed: from_numpy rejects negative strides (e.g. x[::-1]).
            idx = torch.from_numpy(np.ascontiguousarray(arr, dtype=np.int64))
        k = self.factors.num_factors
        if idx.ndim != 2 or idx.shape[1] != k:
            raise ValueError(
                f"factor indices must have shape (B, {k}) for factors {self.factors.names}, "
                f"got {tuple(idx.shape)}"
            )
        if idx.shape[0]:
            sizes = torch.tensor(self.factors.sizes, device=idx.device)
            # One reduction for the whole batch: a single device sync on CUDA, not one per factor.
            bad = ((idx < 0) | (idx >= sizes)).any(dim=0)
            if bool(bad.any()):
                col = int(torch.nonzero(bad)[0, 0])
                column = idx[:, col]
                value = int(column[(column < 0) | (column >= sizes[col])][0])
                raise ValueError(
                    f"factor {self.factors.names[col]!r}: index {value} is out of range "
                    f"0..{self.factors.sizes[col] - 1}"
                )
        return idx

    def __repr__(self) -> str:
        dims = ", ".join(f"{f.name}={f.size}" for f in self.factors.factors)
        return f"{type(self).__name__}({self.name!r}: {dims}; {self.channels}x{self.resolution}^2)"
