"""Published image sets resized once to 64x64 into the cache folder, then memory-mapped.

SmallNORB (96x96 stereo pairs) and Cars3D (128x128 renders, one MATLAB file per car) are
published larger than the 64x64 disentanglement_lib trains on, and in formats no memory map
reads. Their loaders resize every image once, as disentanglement_lib does at every start,
into one uint8 ``.npy`` in the cache folder (``cache_dir``, default ``~/.cache/raystudy``),
named by a digest of the source files' names, sizes and modification times, so a changed
source is converted again; a trial then maps that file and reads only the rows it renders.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from raystudy.data.sources.files.arrays import default_cache_dir


def resize_images(images: np.ndarray, size: int) -> np.ndarray:
    """uint8 ``[N, H, W]`` or ``[N, H, W, 3]`` images resized to ``size x size`` with PIL's
    Lanczos filter (a = 3, the windowed sinc of Duchon 1979, "Lanczos filtering in one and two
    dimensions"): disentanglement_lib's ``PIL.Image.ANTIALIAS``, an alias of ``LANCZOS``."""
    from PIL import Image

    out = np.empty((images.shape[0], size, size, *images.shape[3:]), dtype=np.uint8)
    for i, image in enumerate(images):
        resized = Image.fromarray(np.ascontiguousarray(image)).resize(
            (size, size), Image.Resampling.LANCZOS
        )
        out[i] = np.asarray(resized, dtype=np.uint8)
    return out


def sources_digest(paths: Sequence[Path], *extra: object) -> str:
    """A hex digest of the files' names, sizes and modification times (and ``extra``)."""
    h = hashlib.sha256()
    for p in paths:
        stat = p.stat()
        h.update(f"{p.name}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    h.update(repr(extra).encode())
    return h.hexdigest()[:20]


def cached_array(
    cache_dir: str | os.PathLike[str] | None,
    name: str,
    shape: tuple[int, ...],
    fill: Callable[[np.ndarray], None],
) -> Path:
    """The cached ``.npy`` ``name`` of uint8 ``shape``, written first when missing by
    ``fill(array)`` into a memory map that is renamed into place only when complete."""
    folder = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    cached = folder / name
    if cached.is_file():
        return cached
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f"{name}.partial-{os.getpid()}"
    try:
        array = np.lib.format.open_memmap(partial, "w+", np.uint8, shape)
        fill(array)
        array.flush()
        del array
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, cached)  # atomic: a concurrent trial sees all of it or nothing
    return cached


@dataclass
class NpyRows:
    """Row access to a ``.npy`` file, memory-mapped on first read."""

    path: Path
    _map: np.ndarray | None = field(default=None, init=False, repr=False)

    def read(self, rows: np.ndarray) -> np.ndarray:
        if self._map is None:
            self._map = np.load(self.path, mmap_mode="r")
        return np.asarray(self._map[rows])

    def __getstate__(self) -> dict[str, Any]:
        # A map does not travel (e.g. to a Ray worker); it reopens on first read.
        return {"path": self.path, "_map": None}
