"""The official factor grids of the datasets that come both drawn and from files: dSprites,
3dshapes and MPI3D, in the files' row-major factor order, so a procedural dataset and its file
share factor names, sizes and values (and a selector or a paper's split means the same on both).
How a renderer draws each value is its own module's business
(:mod:`raystudy.data.sources.procedural.dsprites`, ``.shapes3d``, ``.mpi3d``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from raystudy.data.core.factors import Factor
from raystudy.data.core.families import FAMILIES

# --- dSprites (Matthey et al. 2017) ------------------------------------------------------------

#: ``orientation_grid`` values: the 40 angles of [0, 2 pi), or the official files' 40 of [0, 2 pi].
ORIENTATION_GRIDS = ("open", "closed")


def dsprites_factors(
    orientation_bins: int | None = None, orientation_grid: str = "open"
) -> tuple[Factor, ...]:
    """The five dSprites factors in the official row-major order; ``orientation_bins`` swaps
    the 40 angles of a full turn for that many of a quarter turn, ``orientation_grid="closed"``
    for the official files' angles (see :mod:`raystudy.data.sources.procedural.dsprites`)."""
    if orientation_grid not in ORIENTATION_GRIDS:
        raise ValueError(
            f"orientation_grid must be one of {', '.join(ORIENTATION_GRIDS)}, "
            f"got {orientation_grid!r}"
        )
    if orientation_bins is not None and orientation_grid != "open":
        raise ValueError(
            "orientation_bins and orientation_grid: closed cannot be combined (the closed grid "
            "is the official 40 angles of a full turn)"
        )
    if orientation_bins is None:
        angles = np.linspace(0.0, 2 * np.pi, 40, endpoint=orientation_grid == "closed")
    else:
        angles = np.linspace(0.0, np.pi / 2, orientation_bins, endpoint=False)
    return (
        Factor("shape", 3, (0.0, 1.0, 2.0)),
        Factor("scale", 6, tuple(np.linspace(0.5, 1.0, 6).tolist())),
        Factor("orientation", angles.size, tuple(angles.tolist())),
        Factor("pos_x", 32, tuple(np.linspace(0.0, 1.0, 32).tolist())),
        Factor("pos_y", 32, tuple(np.linspace(0.0, 1.0, 32).tolist())),
    )


# --- 3dshapes (Burgess & Kim 2018) ------------------------------------------------------------

SHAPES3D_HUES = tuple(np.round(np.arange(10) / 10, 1).tolist())
SHAPES3D_SCALES = tuple(np.linspace(0.75, 1.25, 8).tolist())
SHAPES3D_ORIENTATIONS_DEG = tuple(np.linspace(-30.0, 30.0, 15).tolist())


def shapes3d_factors() -> tuple[Factor, ...]:
    """The six 3dshapes factors with their official values (orientation in degrees)."""
    return (
        Factor("floor_hue", 10, SHAPES3D_HUES),
        Factor("wall_hue", 10, SHAPES3D_HUES),
        Factor("object_hue", 10, SHAPES3D_HUES),
        Factor("scale", 8, SHAPES3D_SCALES),
        Factor("shape", 4, (0.0, 1.0, 2.0, 3.0)),
        Factor("orientation", 15, SHAPES3D_ORIENTATIONS_DEG),
    )


# --- MPI3D (Gondal et al. 2019) ----------------------------------------------------------------

MPI3D_NAMES = FAMILIES["mpi3d"]
MPI3D_SIZES = (6, 6, 2, 3, 3, 40, 40)


def mpi3d_factors(sizes: Sequence[int] = MPI3D_SIZES) -> tuple[Factor, ...]:
    """The seven MPI3D factors; their values are the class indices (colours, shapes and
    camera heights are categories; the two axes are 40 equal steps of the arm's joints)."""
    return tuple(
        Factor(name, int(n), tuple(float(i) for i in range(int(n))))
        for name, n in zip(MPI3D_NAMES, sizes, strict=True)
    )
