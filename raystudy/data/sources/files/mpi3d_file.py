"""The MPI3D files (Gondal et al. 2019, "On the Transfer of Inductive Bias from Simulation to
the Real World: a New Disentanglement Dataset"), ``mpi3d_{toy,realistic,real}.npz``.

Format: ``images`` ``(1036800, 64, 64, 3)`` uint8, whose factors are implied by row-major
order over (6, 6, 2, 3, 3, 40, 40) = object_color, object_shape, object_size, camera_height,
background_color, horizontal_axis, vertical_axis. The three files share these factors, so
``path`` (toy or realistic) is the ``sim`` domain and the optional ``real_path`` (the real
file) the ``real`` domain: probes fitted on one can be scored on the other (sim2real).

``factor_sizes`` describes a file holding a smaller row-major grid of the same seven factors
(tests write such files; the official files need no option). ``images`` is memory-mapped
(decompressed once into ``cache_dir`` if the member is deflated).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from raystudy.data.core.factors import FactorSpace
from raystudy.data.core.files import DatasetFileError, require_file
from raystudy.data.core.grids import MPI3D_NAMES, MPI3D_SIZES, mpi3d_factors
from raystudy.data.core.registry import register_dataset
from raystudy.data.sources.files.arrays import NpzRows, npz_header
from raystudy.data.sources.files.dataset import FileDataset


def _expected(sizes: Sequence[int]) -> str:
    n = math.prod(sizes)
    return (
        f"an MPI3D .npz: images ({n}, 64, 64, 3) uint8, rows in row-major order over "
        f"{tuple(sizes)} = {', '.join(MPI3D_NAMES)}"
    )


@register_dataset("mpi3d_file")
class MPI3DFile(FileDataset):
    """MPI3D from the official ``.npz`` files.

    Options: ``path`` (toy or realistic: the ``sim`` domain; required), ``real_path`` (the
    real file: the ``real`` domain), ``cache_dir``, ``factor_sizes`` (sub-grid files only).
    """

    name = "mpi3d_file"
    channels = 3
    possible_domains = ("sim", "real")  # real with real_path
    official_grid = mpi3d_factors()

    def __init__(
        self,
        path: str | os.PathLike[str],
        real_path: str | os.PathLike[str] | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        factor_sizes: Sequence[int] | None = None,
    ) -> None:
        sizes = tuple(int(s) for s in (factor_sizes or MPI3D_SIZES))
        if len(sizes) != len(MPI3D_NAMES) or min(sizes) < 1:
            raise ValueError(
                f"factor_sizes must be {len(MPI3D_NAMES)} positive sizes for "
                f"{MPI3D_NAMES}, got {factor_sizes}"
            )
        expected = _expected(sizes)
        cache = Path(cache_dir) if cache_dir else None
        readers = {"sim": self._reader(path, sizes, expected, cache)}
        if real_path is not None:
            readers["real"] = self._reader(real_path, sizes, expected, cache)
        space = FactorSpace(mpi3d_factors(sizes))
        super().__init__(space, readers, None, 3, 64, 1.0 / 255.0, f"file {str(path)!r}")

    @staticmethod
    def _reader(
        path: str | os.PathLike[str], sizes: tuple[int, ...], expected: str, cache: Path | None
    ) -> NpzRows:
        p = require_file(path, expected)
        shape, dtype = npz_header(p, "images", expected)
        want = (math.prod(sizes), 64, 64, 3)
        if tuple(shape) != want or dtype != np.uint8:
            raise DatasetFileError(f"{str(p)!r}: images is {dtype} {shape}; expected {expected}")
        return NpzRows(p, "images", expected, cache)
