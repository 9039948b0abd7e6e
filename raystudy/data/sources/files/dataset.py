"""Datasets read from official files: ``render`` is an index lookup (architecture.md section 3).

A file holds ``N`` images and, explicitly (dSprites' ``latents_classes``, 3dshapes' ``labels``)
or implicitly (MPI3D: row-major order), the factor combination of each. A lookup table maps a
combination's row-major grid position to its row (-1 where the file lacks it), so a file that
holds only part of the grid still works: the missing combinations are not ``feasible``, and
splits never sample them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np
import torch

from raystudy.data.core.base import GroundTruthDataset
from raystudy.data.core.factors import Factor, FactorSpace
from raystudy.data.core.files import DatasetFileError


class RowReader(Protocol):
    def read(self, rows: np.ndarray) -> np.ndarray: ...


def lookup_from_classes(
    classes: np.ndarray, space: FactorSpace, path: str, expected: str
) -> np.ndarray:
    """``lookup[grid position] = row`` from an ``(N, K)`` array of factor indices; error on
    an index out of range or a combination that appears twice."""
    sizes = np.asarray(space.sizes)
    bad = (classes < 0) | (classes >= sizes)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise DatasetFileError(
            f"{path!r}: row {row} has {space.names[col]} index {classes[row, col]}, outside "
            f"0..{sizes[col] - 1}; expected {expected}"
        )
    flat = np.ravel_multi_index(tuple(classes.T), space.sizes)
    lookup = np.full(space.total, -1, dtype=np.int64)
    lookup[flat] = np.arange(classes.shape[0])
    if np.count_nonzero(lookup >= 0) != classes.shape[0]:
        _, counts = np.unique(flat, return_counts=True)
        raise DatasetFileError(
            f"{path!r}: {int((counts > 1).sum())} factor combination(s) appear in more than one "
            f"row; expected each combination once ({expected})"
        )
    return lookup


def require_images(
    path: Path,
    key: str,
    shape: tuple[int, ...],
    dtype: np.dtype[Any],
    image_shape: tuple[int, ...],
    expected: str,
) -> None:
    """DatasetFileError unless the array ``key`` of the file (its ``shape`` and ``dtype``, as
    its header says) holds one uint8 image of ``image_shape`` per row."""
    if len(shape) != 1 + len(image_shape) or shape[1:] != image_shape or dtype != np.uint8:
        want = ", ".join(["N", *(str(n) for n in image_shape)])
        raise DatasetFileError(
            f"{str(path)!r}: {key} is {dtype} {shape}; expected ({want}) uint8 ({expected})"
        )


class FileDataset(GroundTruthDataset):
    """Images from files, one :class:`RowReader` per domain, values scaled to [0, 1]."""

    #: The published grid's factors: what the catalogue describes, without a file.
    official_grid: ClassVar[tuple[Factor, ...]]

    @classmethod
    def official_factors(cls) -> FactorSpace:
        return FactorSpace(cls.official_grid)

    def __init__(
        self,
        factors: FactorSpace,
        readers: dict[str, RowReader],
        lookup: np.ndarray | None,
        channels: int,
        resolution: int,
        value_scale: float,
        source: str,
    ) -> None:
        self.factors = factors
        self.domains = tuple(readers)
        self._readers = readers
        self._lookup = lookup  # None: the file is the full grid in row-major order
        self.channels = channels
        self.resolution = resolution
        self._value_scale = value_scale
        self._source = source

    def rows(self, indices: torch.Tensor | np.ndarray) -> np.ndarray:
        """File rows of validated ``(B, K)`` indices (-1 where the file lacks them)."""
        idx = self.as_index_tensor(indices).cpu().numpy()
        flat = np.ravel_multi_index(tuple(idx.T), self.factors.sizes) if idx.size else idx[:, 0]
        return flat if self._lookup is None else self._lookup[flat]

    def feasible(self, indices: torch.Tensor | np.ndarray) -> torch.Tensor:
        """True where the file holds the combination."""
        device = indices.device if isinstance(indices, torch.Tensor) else torch.device("cpu")
        return torch.from_numpy(self.rows(indices) >= 0).to(device)

    def render(self, indices: torch.Tensor | np.ndarray, domain: str = "sim") -> torch.Tensor:
        self.check_domain(domain)
        device = indices.device if isinstance(indices, torch.Tensor) else torch.device("cpu")
        rows = self.rows(indices)
        missing = np.flatnonzero(rows < 0)
        if missing.size:
            idx = self.as_index_tensor(indices).cpu().numpy()[missing[0]]
            combo = dict(zip(self.factors.names, idx.tolist(), strict=True))
            raise ValueError(
                f"dataset {self.name!r}: {self._source} holds no image for {combo} "
                f"({missing.size} of {rows.size} requested combinations are missing)"
            )
        data = torch.from_numpy(self._readers[domain].read(rows))
        if data.ndim == 3:  # (B, H, W): one channel
            data = data.unsqueeze(-1)
        # Cast and scale after the move: uint8 is a quarter of the bytes to transfer.
        images = data.to(device).permute(0, 3, 1, 2).float().mul_(self._value_scale)
        return images.contiguous()
