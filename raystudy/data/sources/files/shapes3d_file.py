"""The official 3dshapes file (Burgess & Kim 2018), ``3dshapes.h5``.

Format: ``images`` ``(N, 64, 64, 3)`` uint8 and ``labels`` ``(N, 6)`` float64 holding each
image's factor *values* (floor_hue, wall_hue, object_hue in 0.0..0.9; scale 0.75..1.25;
shape 0..3; orientation -30..30 degrees), the grid of the procedural ``shapes3d``. Labels are
matched to the nearest grid value (within a tenth of the spacing, else an error). The images
are memory-mapped when stored contiguously (as officially), else read row by row via h5py.
"""

from __future__ import annotations

import os

import numpy as np

from raystudy.data.core.factors import FactorSpace
from raystudy.data.core.files import DatasetFileError, require_file
from raystudy.data.core.grids import shapes3d_factors
from raystudy.data.core.registry import register_dataset
from raystudy.data.sources.files.arrays import H5Rows, h5_dataset_info, h5_read
from raystudy.data.sources.files.dataset import (
    FileDataset,
    lookup_from_classes,
    require_images,
)

EXPECTED = (
    "the 3dshapes .h5: images (N, 64, 64, 3) uint8, labels (N, 6) float64 (floor_hue, "
    "wall_hue, object_hue, scale, shape, orientation values)"
)


def labels_to_indices(labels: np.ndarray, space: FactorSpace, path: str) -> np.ndarray:
    """Factor indices ``(N, K)`` of factor values: the nearest grid value per column, which
    must be within 10% of that factor's smallest spacing."""
    out = np.empty(labels.shape, dtype=np.int64)
    for k, factor in enumerate(space.factors):
        values = np.asarray(factor.values)
        nearest = np.abs(labels[:, k, None] - values[None, :]).argmin(axis=1)
        gap = np.abs(labels[:, k] - values[nearest])
        tolerance = 0.1 * (np.diff(values).min() if values.size > 1 else 1.0)
        if gap.size and gap.max() > tolerance:
            row = int(gap.argmax())
            raise DatasetFileError(
                f"{path!r}: labels row {row} has {factor.name} = {float(labels[row, k])!r}, "
                f"not one of {[round(v, 4) for v in values.tolist()]} ({EXPECTED})"
            )
        out[:, k] = nearest
    return out


@register_dataset("shapes3d_file")
class Shapes3DFile(FileDataset):
    """3dshapes from the official ``.h5``; option ``path`` (required)."""

    name = "shapes3d_file"
    channels = 3
    official_grid = shapes3d_factors()

    def __init__(self, path: str | os.PathLike[str]) -> None:
        p = require_file(path, EXPECTED)
        shape, dtype = h5_dataset_info(p, "images", EXPECTED)
        require_images(p, "images", shape, dtype, (64, 64, 3), EXPECTED)
        label_shape, label_dtype = h5_dataset_info(p, "labels", EXPECTED)
        if label_shape != (shape[0], 6) or label_dtype.kind != "f":
            raise DatasetFileError(
                f"{str(p)!r}: labels is {label_dtype} {label_shape}; expected ({shape[0]}, 6) "
                f"float64, one row per image ({EXPECTED})"
            )
        space = self.official_factors()
        classes = labels_to_indices(h5_read(p, "labels").astype(np.float64), space, str(p))
        lookup = lookup_from_classes(classes, space, str(p), EXPECTED)
        reader = H5Rows(p, "images")
        super().__init__(space, {"sim": reader}, lookup, 3, 64, 1.0 / 255.0, f"file {str(p)!r}")
