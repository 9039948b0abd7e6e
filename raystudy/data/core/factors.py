"""Factor spaces: the ordered, discrete ground-truth factors of a dataset.

A ground-truth dataset in the sense of Locatello et al. (2019, "Challenging Common
Assumptions in the Unsupervised Learning of Disentangled Representations") is a full grid of
factor combinations; an image is addressed by one integer index per factor, in the dataset's
row-major factor order (the order of the official files, e.g. dSprites' ``latents_classes``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from raystudy.registry import unknown_name_message


@dataclass(frozen=True)
class Factor:
    """One discrete factor of variation: ``values[i]`` is the physical value of index ``i``."""

    name: str
    size: int
    values: tuple[float, ...]

    def __post_init__(self) -> None:
        if self.size < 1:
            raise ValueError(f"factor {self.name!r}: size must be >= 1, got {self.size}")
        if len(self.values) != self.size:
            raise ValueError(
                f"factor {self.name!r}: {len(self.values)} values given for size {self.size}"
            )


@dataclass(frozen=True)
class FactorSpace:
    """The ordered factors of a dataset; index arrays are ``(N, K)`` in this order."""

    factors: tuple[Factor, ...]

    def __post_init__(self) -> None:
        names = [f.name for f in self.factors]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"duplicate factor names: {duplicates}")

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.factors]

    @property
    def sizes(self) -> list[int]:
        return [f.size for f in self.factors]

    @property
    def num_factors(self) -> int:
        return len(self.factors)

    @property
    def total(self) -> int:
        """Number of factor combinations in the full grid."""
        return math.prod(self.sizes)

    def index(self, name: str) -> int:
        """Column of factor ``name``; KeyError lists the valid names."""
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(unknown_name_message("factor", name, self.names)) from None

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` combinations drawn uniformly from the full grid, ``(n, K)`` int64."""
        return rng.integers(0, np.asarray(self.sizes), size=(n, self.num_factors), dtype=np.int64)

    def normalise(self, indices: np.ndarray) -> np.ndarray:
        """Indices mapped to [0, 1] per factor (``idx / (size - 1)``), as the transfer
        metrics regress them; a factor of size 1 maps to 0."""
        self.validate(indices)
        denom = np.maximum(np.asarray(self.sizes, dtype=np.float64) - 1.0, 1.0)
        return np.asarray(indices, dtype=np.float64) / denom

    def ravel(self, indices: np.ndarray) -> np.ndarray:
        """Row-major flat position of each combination in the grid (int64)."""
        self.validate(indices)
        return np.ravel_multi_index(tuple(np.asarray(indices).T), self.sizes).astype(np.int64)

    def validate(self, indices: np.ndarray) -> None:
        """Raise ValueError unless ``indices`` is an ``(N, K)`` integer array inside the grid."""
        arr = np.asarray(indices)
        if arr.ndim != 2 or arr.shape[1] != self.num_factors:
            raise ValueError(
                f"factor indices must have shape (N, {self.num_factors}) for factors "
                f"{self.names}, got {arr.shape}"
            )
        if arr.dtype.kind not in "iu":
            raise ValueError(f"factor indices must be integers, got dtype {arr.dtype}")
        if arr.shape[0] == 0:
            return
        sizes = np.asarray(self.sizes)
        bad = (arr < 0) | (arr >= sizes)
        if bad.any():
            col = int(np.argmax(bad.any(axis=0)))
            row = int(np.argmax(bad[:, col]))
            raise ValueError(
                f"factor {self.names[col]!r}: index {int(arr[row, col])} (row {row}) is out "
                f"of range 0..{sizes[col] - 1}"
            )


def grid_position(idx: torch.Tensor, sizes: list[int]) -> torch.Tensor:
    """Row-major flat position ``sum_k i_k prod_{j > k} n_j`` of each ``(B, K)`` row, int64,
    on the device of ``idx`` (:meth:`FactorSpace.ravel`, without leaving the device)."""
    strides = np.cumprod([1, *sizes[::-1]])[:-1][::-1].tolist()
    return (idx * torch.tensor(strides, dtype=torch.int64, device=idx.device)).sum(dim=1)
