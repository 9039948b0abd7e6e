"""The SmallNORB files (LeCun, Huang & Bottou 2004, "Learning methods for generic object
recognition with invariance to pose and lighting"), as Locatello et al. (2019) train on them.

Format (https://cs.nyu.edu/~ylclab/data/norb-v1.0-small/): six files in one folder,
``smallnorb-<chunk>-{dat,cat,info}.mat`` (or ``.mat.gz``) for the chunks
``5x46789x9x18x6x2x96x96-training`` and ``5x01235x9x18x6x2x96x96-testing``, each a NORB binary
matrix: little-endian int32 magic number (the element type: 0x1E3D4C51 float32, 0x1E3D4C53
float64, 0x1E3D4C54 int32, 0x1E3D4C55 uint8, 0x1E3D4C56 int16), int32 ``ndim``, then
``max(3, ndim)`` int32 dimensions (unused ones 1), then the elements in row-major order.
``dat``: uint8 ``(N, 2, 96, 96)``, stereo pairs; ``cat``: int32 ``(N,)``, the category 0..4
(four-legged animal, human figure, airplane, truck, car); ``info``: int32 ``(N, 4)``, the
instance 0..9, elevation 0..8 (30..70 degrees), azimuth 0, 2, ..., 34 (times 10 degrees) and
lighting 0..5. The two chunks together hold every combination once (48,600 pairs).

As disentanglement_lib's ``data/ground_truth/norb.py``: both chunks, the left image of each
pair resized to 64x64 with Lanczos
(:func:`raystudy.data.sources.files.resized_cache.resize_images`), one channel in [0, 1]; the
factors are category 5, elevation 9, azimuth 18 (the file's value / 2) and lighting 6; the instance
is not a factor but drawn per image among the category's 10 (the
ones the files hold). It is drawn as :mod:`raystudy.data.domains.nuisance` says: ``nuisance: fixed``
(default) keeps one instance per factor combination, so a study sees a tenth of the images;
``nuisance: fresh`` draws anew at every render, disentanglement_lib's way, over all of them.
Differences: the resize is in 8 bits (disentanglement_lib resizes the pairs read as int8 in
PIL's 32-bit mode, where Lanczos can overshoot [0, 255] by a few levels). The resized images
are written once to the cache folder (:mod:`raystudy.data.sources.files.resized_cache`).
"""

from __future__ import annotations

import gzip
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import torch

from raystudy.data.core.factors import Factor, FactorSpace, grid_position
from raystudy.data.core.files import DatasetFileError, require_folder
from raystudy.data.core.registry import register_dataset
from raystudy.data.domains.nuisance import check_nuisance, nuisance_uniforms
from raystudy.data.sources.files.dataset import FileDataset, lookup_from_classes
from raystudy.data.sources.files.resized_cache import (
    NpyRows,
    cached_array,
    resize_images,
    sources_digest,
)

CHUNKS = ("5x46789x9x18x6x2x96x96-training", "5x01235x9x18x6x2x96x96-testing")
NORB_TYPES = {
    0x1E3D4C51: np.dtype("<f4"),
    0x1E3D4C53: np.dtype("<f8"),
    0x1E3D4C54: np.dtype("<i4"),
    0x1E3D4C55: np.dtype("u1"),
    0x1E3D4C56: np.dtype("<i2"),
}
BYTE_MATRIX, INT_MATRIX = 0x1E3D4C55, 0x1E3D4C54
CATEGORIES = ("animal", "human", "airplane", "truck", "car")
NUM_INSTANCES = 10
EXPECTED = (
    "the SmallNORB folder: smallnorb-<chunk>-dat.mat (NORB byte matrix (N, 2, 96, 96)), "
    "-cat.mat (int matrix (N,), categories 0..4) and -info.mat (int matrix (N, 4): instance "
    "0..9, elevation 0..8, azimuth 0, 2, ..., 34, lighting 0..5), .mat or .mat.gz, for the "
    f"chunks {' and '.join(CHUNKS)}"
)
_ROWS_PER_BLOCK = 1024


def smallnorb_factors() -> tuple[Factor, ...]:
    """disentanglement_lib's four factors; elevation and azimuth in degrees."""
    return (
        Factor("category", 5, tuple(float(c) for c in range(5))),
        Factor("elevation", 9, tuple(30.0 + 5.0 * k for k in range(9))),
        Factor("azimuth", 18, tuple(20.0 * k for k in range(18))),
        Factor("lighting", 6, tuple(float(k) for k in range(6))),
    )


def _file_factors() -> FactorSpace:
    """The files' own grid: the four factors with the instance second, as ``cat`` and
    ``info`` side by side give them."""
    category, *rest = smallnorb_factors()
    instance = Factor("instance", NUM_INSTANCES, tuple(float(k) for k in range(NUM_INSTANCES)))
    return FactorSpace((category, instance, *rest))


@dataclass(frozen=True)
class NorbHeader:
    dtype: np.dtype
    shape: tuple[int, ...]
    offset: int  # bytes before the first element


def parse_norb_header(head: bytes, path: str) -> NorbHeader:
    """The header of a NORB binary matrix from its first bytes (at least ``8 + 4 * max(3,
    ndim)``; format in the module docstring)."""
    if len(head) < 20:
        raise DatasetFileError(
            f"{path!r} is {len(head)} bytes, shorter than a NORB matrix header; expected {EXPECTED}"
        )
    magic, ndim = struct.unpack("<ii", head[:8])
    if magic not in NORB_TYPES:
        raise DatasetFileError(
            f"{path!r}: magic number {magic:#x} is not a NORB matrix type "
            f"({', '.join(f'{m:#x}' for m in NORB_TYPES)}); expected {EXPECTED}"
        )
    slots = max(3, ndim)
    if not 1 <= ndim <= 16 or len(head) < 8 + 4 * slots:
        raise DatasetFileError(f"{path!r}: header says {ndim} dimensions; expected {EXPECTED}")
    dims = struct.unpack(f"<{slots}i", head[8 : 8 + 4 * slots])[:ndim]
    if min(dims) < 0:
        raise DatasetFileError(f"{path!r}: negative dimension in {dims}; expected {EXPECTED}")
    return NorbHeader(NORB_TYPES[magic], tuple(dims), 8 + 4 * slots)


def _open(path: Path) -> BinaryIO:
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def read_header(path: Path, magic: int, ndim: int) -> NorbHeader:
    """The header of ``path``, which must be a matrix of type ``magic`` with ``ndim``
    dimensions and, when not compressed, exactly as many bytes as its header says."""
    try:
        with _open(path) as f:
            header = parse_norb_header(f.read(8 + 4 * 16), str(path))
    except (OSError, EOFError) as exc:
        raise DatasetFileError(
            f"{str(path)!r} cannot be read ({exc}); expected {EXPECTED}"
        ) from None
    want = NORB_TYPES[magic]
    if header.dtype != want or len(header.shape) != ndim:
        raise DatasetFileError(
            f"{str(path)!r} is a {header.dtype} matrix of shape {header.shape}; expected a "
            f"{want} matrix of {ndim} dimensions ({EXPECTED})"
        )
    size = header.offset + int(np.prod(header.shape)) * header.dtype.itemsize
    if path.suffix != ".gz" and path.stat().st_size != size:
        raise DatasetFileError(
            f"{str(path)!r} is {path.stat().st_size} bytes, but its header says {header.dtype} "
            f"{header.shape}, {size} bytes: the file is truncated or corrupt; expected {EXPECTED}"
        )
    return header


def read_rows(path: Path, header: NorbHeader, per_block: int) -> Iterator[np.ndarray]:
    """The matrix's rows, ``per_block`` at a time (a 448 MB ``dat`` is never read whole)."""
    row_shape = header.shape[1:]
    row_bytes = int(np.prod(row_shape)) * header.dtype.itemsize
    with _open(path) as f:
        f.read(header.offset)
        for start in range(0, header.shape[0], per_block):
            n = min(per_block, header.shape[0] - start)
            data = f.read(n * row_bytes)
            if len(data) != n * row_bytes:
                raise DatasetFileError(
                    f"{str(path)!r} ends after row {start + len(data) // row_bytes} of "
                    f"{header.shape[0]}: the file is truncated; expected {EXPECTED}"
                )
            yield np.frombuffer(data, header.dtype).reshape((n, *row_shape))


def read_matrix(path: Path, magic: int, ndim: int) -> np.ndarray:
    """A whole (small) NORB matrix: ``cat`` or ``info``."""
    header = read_header(path, magic, ndim)
    blocks = list(read_rows(path, header, max(1, header.shape[0])))
    return np.concatenate(blocks) if blocks else np.zeros(header.shape, header.dtype)


def _find(folder: Path, chunk: str, part: str) -> Path:
    stem = f"smallnorb-{chunk}-{part}.mat"
    for name in (stem, stem + ".gz"):
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(
        f"SmallNORB file {str(folder / stem)!r} (or .gz) not found; expected {EXPECTED}"
    )


def norb_features(cat: np.ndarray, info: np.ndarray, path: str) -> np.ndarray:
    """``(N, 5)`` int64 factor indices (category, instance, elevation, azimuth / 2,
    lighting) of ``cat`` and ``info``, checked against the documented ranges."""
    if cat.shape[0] != info.shape[0] or info.shape[1:] != (4,):
        raise DatasetFileError(
            f"{path!r}: cat has shape {cat.shape} and info {info.shape}; expected (N,) and "
            f"(N, 4) ({EXPECTED})"
        )
    if info.size and np.any(info[:, 2] % 2):
        row = int(np.flatnonzero(info[:, 2] % 2)[0])
        raise DatasetFileError(
            f"{path!r}: info row {row} has azimuth {int(info[row, 2])}, which is odd; "
            f"expected {EXPECTED}"
        )
    features = np.column_stack((cat, info)).astype(np.int64)
    features[:, 3] //= 2
    return features


@register_dataset("smallnorb_file")
class SmallNORBFile(FileDataset):
    """SmallNORB from the published files (left image, 64x64); the instance a nuisance.

    Options: ``path`` (the folder of the six files; required), ``cache_dir`` (where the
    resized images are kept), ``nuisance`` (``fixed`` or ``fresh``: how the instance is
    drawn), ``nuisance_seed``.
    """

    name = "smallnorb_file"
    channels = 1
    official_grid = smallnorb_factors()

    def __init__(
        self,
        path: str | os.PathLike[str],
        cache_dir: str | os.PathLike[str] | None = None,
        nuisance: str = "fixed",
        nuisance_seed: int = 0,
    ) -> None:
        self.nuisance, self.nuisance_seed = check_nuisance(nuisance, nuisance_seed)
        folder = require_folder(path, "SmallNORB", EXPECTED)
        dats, features = [], []
        for chunk in CHUNKS:
            dat = _find(folder, chunk, "dat")
            header = read_header(dat, BYTE_MATRIX, 4)
            cat = read_matrix(_find(folder, chunk, "cat"), INT_MATRIX, 1)
            info = read_matrix(_find(folder, chunk, "info"), INT_MATRIX, 2)
            if header.shape[1:] != (2, 96, 96) or header.shape[0] != cat.shape[0]:
                raise DatasetFileError(
                    f"{str(dat)!r} holds {header.shape}, beside {cat.shape[0]} categories; "
                    f"expected ({cat.shape[0]}, 2, 96, 96) ({EXPECTED})"
                )
            features.append(norb_features(cat, info, str(dat)))
            dats.append((dat, header))
        space = _file_factors()
        lookup = lookup_from_classes(np.concatenate(features), space, str(folder), EXPECTED)
        # Per combination of the four factors, the rows of the instances the files hold.
        per_instance = (
            lookup.reshape(space.sizes).transpose(0, 2, 3, 4, 1).reshape(-1, NUM_INSTANCES)
        )
        order = np.argsort(per_instance < 0, axis=1, kind="stable")
        self._choices = np.take_along_axis(per_instance, order, axis=1)
        self._counts = np.count_nonzero(per_instance >= 0, axis=1)
        total = sum(header.shape[0] for _, header in dats)

        def fill(out: np.ndarray) -> None:
            start = 0
            for dat, header in dats:
                for block in read_rows(dat, header, _ROWS_PER_BLOCK):
                    out[start : start + len(block)] = resize_images(block[:, 0], 64)
                    start += len(block)

        digest = sources_digest([d for d, _ in dats], "left", 64)
        cached = cached_array(cache_dir, f"smallnorb-{digest}.npy", (total, 64, 64), fill)
        super().__init__(
            self.official_factors(),
            {"sim": NpyRows(cached)},
            None,
            1,
            64,
            1.0 / 255.0,
            f"folder {str(folder)!r}",
        )

    def _positions(self, indices: torch.Tensor | np.ndarray) -> torch.Tensor:
        return grid_position(self.as_index_tensor(indices), self.factors.sizes)

    def rows(self, indices: torch.Tensor | np.ndarray) -> np.ndarray:
        """File rows of ``(B, 4)`` indices: one of the combination's instances, drawn from
        the nuisance uniform ``u`` as the ``floor(u * count)``-th (-1 where there is none)."""
        position = self._positions(indices)
        u = nuisance_uniforms(position, 1, self.nuisance, self.nuisance_seed)[:, 0]
        flat = position.cpu().numpy()
        counts = self._counts[flat]
        pick = np.minimum((u.cpu().numpy() * counts).astype(np.int64), np.maximum(counts - 1, 0))
        return self._choices[flat, pick]

    def feasible(self, indices: torch.Tensor | np.ndarray) -> torch.Tensor:
        """True where the files hold some instance of the combination."""
        device = indices.device if isinstance(indices, torch.Tensor) else torch.device("cpu")
        held = self._counts[self._positions(indices).cpu().numpy()] > 0
        return torch.from_numpy(held).to(device)
