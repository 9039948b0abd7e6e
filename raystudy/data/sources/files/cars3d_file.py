"""The Cars3D files (Reed, Zhang, Zhang & Lee 2015, "Deep Visual Analogy-Making"), as
Locatello et al. (2019) train on them.

Format: a folder of MATLAB files ``car_<id>_mesh.mat`` (183 as published), one per car model,
each holding ``im``, uint8 ``(128, 128, 3, 24, 4)``: rows, columns, RGB, then 24 azimuths and
4 elevations of the car rendered on white.

As disentanglement_lib's ``data/ground_truth/cars3d.py``: ``np.einsum("abcde->deabc", im)``
gives the images azimuth by elevation; each is resized to 64x64 with Lanczos (its
``thumbnail((64, 64), ANTIALIAS)``, the same on a square image:
:func:`raystudy.data.sources.files.resized_cache.resize_images`), 3 channels in [0, 1]; the factors,
in row-major order, are elevation 4, azimuth 24 and object_type 183 (the car). Difference: cars are
numbered in the sorted order of their file names; disentanglement_lib numbers them in
the order its folder listing returns, which no file records, so an ``object_type`` index need
not name the same car there. The resized images are written once to the cache folder
(:mod:`raystudy.data.sources.files.resized_cache`).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from raystudy.data.core.factors import Factor, FactorSpace
from raystudy.data.core.files import DatasetFileError, require_folder
from raystudy.data.core.registry import register_dataset
from raystudy.data.sources.files.dataset import FileDataset
from raystudy.data.sources.files.resized_cache import (
    NpyRows,
    cached_array,
    resize_images,
    sources_digest,
)

NUM_CARS = 183
ELEVATIONS, AZIMUTHS = 4, 24
PATTERN = "car_*_mesh.mat"
EXPECTED = (
    f"the Cars3D folder: {PATTERN} MATLAB files, each holding im, uint8 (S, S, 3, "
    f"{AZIMUTHS}, {ELEVATIONS}) with S >= 64 (128 as published): one car's {AZIMUTHS} "
    f"azimuths x {ELEVATIONS} elevations"
)


def cars3d_factors(num_cars: int = NUM_CARS) -> tuple[Factor, ...]:
    """disentanglement_lib's three factors, in its order; values are the indices."""
    return tuple(
        Factor(name, n, tuple(float(k) for k in range(n)))
        for name, n in (("elevation", ELEVATIONS), ("azimuth", AZIMUTHS), ("object_type", num_cars))
    )


def mesh_images(im: np.ndarray) -> np.ndarray:
    """A car's ``im`` ``(S, S, 3, 24, 4)`` as ``(4 * 24, S, S, 3)`` images, elevation-major
    (row ``e * 24 + a``): disentanglement_lib's ``einsum("abcde->deabc")``, transposed to the
    row-major order of (elevation, azimuth)."""
    return np.ascontiguousarray(im.transpose(4, 3, 0, 1, 2)).reshape(-1, *im.shape[:3])


def _check_mesh(path: Path) -> None:
    """``im`` of the expected type and shape, read from the file's headers only."""
    import scipy.io  # not at import time: it takes longer to import than raystudy.data

    try:
        variables = {name: (shape, cls) for name, shape, cls in scipy.io.whosmat(path)}
    except Exception as exc:  # scipy raises several types for a file that is not MATLAB's
        raise DatasetFileError(
            f"{str(path)!r} is not a readable MATLAB file ({exc}); expected {EXPECTED}"
        ) from None
    if "im" not in variables:
        raise DatasetFileError(
            f"{str(path)!r} has no variable 'im' (it has {sorted(variables)}); expected {EXPECTED}"
        )
    shape, cls = variables["im"]
    square = len(shape) == 5 and shape[0] == shape[1] >= 64
    if cls != "uint8" or not square or tuple(shape[2:]) != (3, AZIMUTHS, ELEVATIONS):
        raise DatasetFileError(f"{str(path)!r}: im is {cls} {shape}; expected {EXPECTED}")


@register_dataset("cars3d_file")
class Cars3DFile(FileDataset):
    """Cars3D from the published ``car_*_mesh.mat`` files (64x64, 3 channels).

    Options: ``path`` (the folder; required), ``cache_dir`` (where the resized images are
    kept), ``num_cars`` (how many files the folder holds: 183, or fewer for a partial set).
    """

    name = "cars3d_file"
    channels = 3
    official_grid = cars3d_factors()

    def __init__(
        self,
        path: str | os.PathLike[str],
        cache_dir: str | os.PathLike[str] | None = None,
        num_cars: int = NUM_CARS,
    ) -> None:
        folder = require_folder(path, "Cars3D", EXPECTED)
        files = sorted(folder.glob(PATTERN))
        if len(files) != num_cars or num_cars < 1:
            raise DatasetFileError(
                f"{str(folder)!r} holds {len(files)} {PATTERN} files; expected {num_cars} "
                f"(option num_cars; {NUM_CARS} as published): {EXPECTED}"
            )
        space = FactorSpace(cars3d_factors(num_cars))

        def fill(out: np.ndarray) -> None:
            import scipy.io

            for f in files:
                _check_mesh(f)
            rows = np.arange(ELEVATIONS * AZIMUTHS) * num_cars
            for car, f in enumerate(files):
                im = scipy.io.loadmat(f, variable_names=["im"])["im"]
                out[rows + car] = resize_images(mesh_images(im), 64)

        digest = sources_digest(files, 64)
        name = f"cars3d-{digest}.npy"
        cached = cached_array(cache_dir, name, (space.total, 64, 64, 3), fill)
        super().__init__(
            space, {"sim": NpyRows(cached)}, None, 3, 64, 1.0 / 255.0, f"folder {str(folder)!r}"
        )
