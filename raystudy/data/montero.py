"""The splits of Montero et al. (2021, "The Role of Disentanglement in Generalisation"):
recombination-to-element, recombination-to-range, extrapolation.

Each excludes one set of combinations from training (index masks on the official grids):

==============  ======================================================================
dSprites        element: ellipse (shape 1) & scale 2..5 & orientation 14..25 &
                pos_x 21..31 & pos_y 21..31; range: square (shape 0) & pos_x 16..31;
                extrapolation: pos_x 16..31
3dshapes        element: floor, wall and object hue 8..9 & scale 5..7 & cylinder (shape 1)
                & orientation 12..14; range: capsule (shape 3) & object hue 5..9;
                extrapolation: floor hue 5..9
MPI3D           element: olive (object_color 5) & cylinder (object_shape 2) & large
                (object_size 1) & center camera (camera_height 1) & sea green
                (background_color 1) & horizontal_axis 36..39 & vertical_axis 36..39;
                range: cylinder & horizontal_axis 0..19; extrapolation: horizontal_axis
                20..39
==============  ======================================================================

The MPI3D sets are the paper's on MPI3D-real, as its code writes them
(``mmrl/disent-and-gen``, ``scripts/configs/datasplits.py``: ``leave1out``, ``cyl2horz``,
``horz_gt20``). One difference: that code trains extrapolation on horizontal_axis < 20 and
tests on > 20, so index 20 is in neither set; here the held-out set is the whole upper half,
20..39 (as dSprites' pos_x 16..31 of 32), so every combination is in one set or the other.

On procedural dSprites use ``orientation_grid: closed`` (the official files' angles): on the
default grid each held-out ellipse of ``element`` turned by 180 degrees is a training image,
pixel for pixel (see :mod:`raystudy.data.dsprites`).

The encoder trains on the rest; the excluded set is the role ``heldout``. The paper's score is
the reconstruction NLL (Bernoulli cross-entropy summed over pixels, mean over images) on
training versus held-out images; besides it, the scenario ``test`` fits probes on the training
set and scores them on the held-out one. In extrapolation the held-out values of the shifted
factor are never seen, so that factor is left out of the mean score (``ood_factors``), as in
Dittadi et al. (2021); in the recombination splits every value is seen and all are scored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from raystudy.data.base import GroundTruthDataset
from raystudy.data.families import family_of, require_sizes
from raystudy.data.split_registry import register_split
from raystudy.data.splits import Scenario, Split

# The official grid sizes the masks are written for (a dSprites with orientation_bins is not).
GRID_SIZES = {
    "dsprites": (3, 6, 40, 32, 32),
    "shapes3d": (10, 10, 10, 8, 4, 15),
    "mpi3d": (6, 6, 2, 3, 3, 40, 40),
}


def _from(i: int) -> dict[str, int]:
    return {"ge": i}


# kind -> family -> (excluded set, factors left out of the mean transfer score)
EXCLUDED: dict[str, dict[str, tuple[dict[str, Any], tuple[str, ...]]]] = {
    "element": {
        "dsprites": (
            {
                "shape": [1],
                "scale": {"ge": 2, "le": 5},
                "orientation": {"ge": 14, "le": 25},
                "pos_x": _from(21),
                "pos_y": _from(21),
            },
            (),
        ),
        "shapes3d": (
            {
                "floor_hue": _from(8),
                "wall_hue": _from(8),
                "object_hue": _from(8),
                "scale": _from(5),
                "shape": [1],
                "orientation": _from(12),
            },
            (),
        ),
        "mpi3d": (
            {
                "object_color": [5],
                "object_shape": [2],
                "object_size": [1],
                "camera_height": [1],
                "background_color": [1],
                "horizontal_axis": _from(36),
                "vertical_axis": _from(36),
            },
            (),
        ),
    },
    "range": {
        "dsprites": ({"shape": [0], "pos_x": _from(16)}, ()),
        "shapes3d": ({"shape": [3], "object_hue": _from(5)}, ()),
        "mpi3d": ({"object_shape": [2], "horizontal_axis": {"le": 19}}, ()),
    },
    "extrapolation": {
        "dsprites": ({"pos_x": _from(16)}, ("pos_x",)),
        "shapes3d": ({"floor_hue": _from(5)}, ("floor_hue",)),
        "mpi3d": ({"horizontal_axis": _from(20)}, ("horizontal_axis",)),
    },
}


def montero_split(ds: GroundTruthDataset, kind: str) -> Split:
    name = f"montero_{kind}"
    family = family_of(ds, name, tuple(GRID_SIZES))
    require_sizes(ds, name, family, GRID_SIZES[family])
    excluded, ood = EXCLUDED[kind][family]
    train = {"not": excluded}
    return Split(
        name,
        train,
        [Scenario("test", train, excluded, ood_factors=ood)],
        ds,
        where=f"splits.{name}",
        heldout=excluded,
    )


def _register(kind: str, doc: str) -> Callable[[GroundTruthDataset], Split]:
    def factory(ds: GroundTruthDataset) -> Split:
        return montero_split(ds, kind)

    factory.__name__ = f"montero_{kind}"
    factory.__doc__ = doc
    return register_split(f"montero_{kind}")(factory)


montero_element = _register("element", "Montero et al. 2021, recombination-to-element.")
montero_range = _register("range", "Montero et al. 2021, recombination-to-range.")
montero_extrapolation = _register("extrapolation", "Montero et al. 2021, extrapolation.")
