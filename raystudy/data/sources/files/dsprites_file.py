"""The official dSprites file (Matthey et al. 2017), ``dsprites_ndarray_*.npz``.

Format: ``imgs`` ``(N, 64, 64)`` uint8 with values 0/1; ``latents_classes`` ``(N, 6)`` int64
over (color, shape, scale, orientation, posX, posY) with sizes (1, 3, 6, 40, 32, 32);
``latents_values`` ``(N, 6)`` float64; ``metadata``, a pickled dict written by Python 2 (read
as latin1 by an unpickler that builds plain data and numpy arrays only, so a crafted file
cannot run code; its ``latents_sizes`` are checked when present). The factor
names are those of the procedural ``dsprites``, so a selector means the same on both.

The official ``imgs`` member is deflated: the first render decompresses it once (about 3 GB)
into ``cache_dir`` (default ``~/.cache/raystudy``) and memory-maps that; an uncompressed
member is mapped in place. Only ``latents_classes`` is read whole (35 MB).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from raystudy.data.core.files import DatasetFileError, require_file
from raystudy.data.core.grids import dsprites_factors
from raystudy.data.core.registry import register_dataset
from raystudy.data.sources.files.arrays import (
    NpzRows,
    npz_head_rows,
    npz_header,
    npz_members,
    npz_pickled_object,
    npz_small_array,
)
from raystudy.data.sources.files.dataset import (
    FileDataset,
    lookup_from_classes,
    require_images,
)

EXPECTED = (
    "the dSprites .npz: imgs (N, 64, 64) uint8 in {0, 1}, latents_classes (N, 6) integer "
    "(color, shape, scale, orientation, posX, posY), latents_values (N, 6) float, metadata"
)
LATENT_SIZES = (1, 3, 6, 40, 32, 32)


@register_dataset("dsprites_file")
class DSpritesFile(FileDataset):
    """dSprites from the official ``.npz``; options ``path`` (required) and ``cache_dir``."""

    name = "dsprites_file"
    channels = 1
    official_grid = dsprites_factors()

    def __init__(
        self, path: str | os.PathLike[str], cache_dir: str | os.PathLike[str] | None = None
    ) -> None:
        p = require_file(path, EXPECTED)
        members = npz_members(p, EXPECTED)
        for key in ("imgs", "latents_classes", "latents_values"):
            if key not in members:
                raise DatasetFileError(
                    f"{str(p)!r} has no array {key!r} (it has {members}); expected {EXPECTED}"
                )
        shape, dtype = npz_header(p, "imgs", EXPECTED)
        require_images(p, "imgs", shape, dtype, (64, 64), EXPECTED)
        classes = npz_small_array(p, "latents_classes", EXPECTED)
        if classes.shape != (shape[0], 6) or classes.dtype.kind not in "iu":
            raise DatasetFileError(
                f"{str(p)!r}: latents_classes is {classes.dtype} {classes.shape}; expected "
                f"({shape[0]}, 6) integers, one row per image ({EXPECTED})"
            )
        if "metadata" in members:
            _check_metadata(p, npz_pickled_object(p, "metadata", EXPECTED))
        if np.any(classes[:, 0] != 0):
            raise DatasetFileError(f"{str(p)!r}: latents_classes color must be 0 ({EXPECTED})")
        space = self.official_factors()
        lookup = lookup_from_classes(classes[:, 1:].astype(np.int64), space, str(p), EXPECTED)
        reader = NpzRows(p, "imgs", EXPECTED, Path(cache_dir) if cache_dir else None)
        self._check_binary(p, shape[0])
        super().__init__(space, {"sim": reader}, lookup, 1, 64, 1.0, f"file {str(p)!r}")

    @staticmethod
    def _check_binary(p: Path, n: int) -> None:
        """Official images are 0/1 (not 0/255): check the first rows (streamed, so cheap even
        when deflated) so a wrong file fails now, not as a model fed values up to 255."""
        head = npz_head_rows(p, "imgs", min(n, 16), EXPECTED)
        if head.size and head.max() > 1:
            raise DatasetFileError(
                f"{str(p)!r}: imgs has values up to {int(head.max())}; expected 0/1 ({EXPECTED})"
            )


def _check_metadata(p: Path, metadata: np.ndarray) -> None:
    meta = metadata.item() if metadata.dtype == object and metadata.ndim == 0 else None
    if not isinstance(meta, dict):
        raise DatasetFileError(f"{str(p)!r}: metadata is not a pickled dict ({EXPECTED})")
    sizes = meta.get("latents_sizes")
    if sizes is not None and tuple(int(s) for s in np.asarray(sizes)) != LATENT_SIZES:
        raise DatasetFileError(
            f"{str(p)!r}: metadata latents_sizes {[int(s) for s in np.asarray(sizes)]} differ "
            f"from the "
            f"dSprites grid {list(LATENT_SIZES)}"
        )
